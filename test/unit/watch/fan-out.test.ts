import { describe, expect, it } from 'vitest';
import { FAN_OUT_SLICE, FanOut } from '../../../src/watch/fan-out.js';
import { FakeClock } from '../../support/fake-clock.js';

function setUp() {
  const clock = new FakeClock();
  const got: [number, string][] = [];
  const fanOut = new FanOut<number, string>(clock, (subscriber, frame) => got.push([subscriber, frame]));
  return { clock, got, fanOut };
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('FanOut', () => {
  it('writes a frame for one slice or fewer at once, in the turn of its sender', () => {
    const { got, fanOut } = setUp();
    let doneWith: [number, number] | undefined;
    fanOut.send('k', 'f1', range(FAN_OUT_SLICE), (startedMs, endedMs) => (doneWith = [startedMs, endedMs]));
    expect(got).toHaveLength(FAN_OUT_SLICE);
    expect(fanOut.sending('k')).toBe(false);
    expect(doneWith).toBeDefined();
  });

  it('writes a larger one a slice per turn, yielding to the event loop between slices', async () => {
    const { clock, got, fanOut } = setUp();
    let done = 0;
    fanOut.send('k', 'f1', range(2 * FAN_OUT_SLICE + 10), () => (done += 1));
    // One slice in the sender's turn, the next behind a zero-delay timer (the fake clock runs
    // the timers each slice sets within one advance).
    expect(got).toHaveLength(FAN_OUT_SLICE);
    expect(clock.pendingTimers).toBe(1);
    expect(done).toBe(0);
    expect([fanOut.sending('k'), fanOut.sending('other')]).toEqual([true, false]);
    await clock.advance(0);
    expect(got).toHaveLength(2 * FAN_OUT_SLICE + 10);
    expect(clock.pendingTimers).toBe(0);
    expect(done).toBe(1);
    expect(fanOut.sending('k')).toBe(false);
  });

  it('sends frames in order, each to its whole list before the next starts', async () => {
    const { clock, got, fanOut } = setUp();
    fanOut.send('k', 'f1', range(FAN_OUT_SLICE + 1));
    // Sent while f1 is part-way: it waits its turn, even though it is small.
    fanOut.send('k', 'f2', [0, 1]);
    expect(got.filter(([, frame]) => frame === 'f2')).toEqual([]);
    await clock.advance(0);
    const order = got.map(([subscriber, frame]) => `${frame}:${subscriber}`);
    expect(order.indexOf(`f1:${FAN_OUT_SLICE}`)).toBeLessThan(order.indexOf('f2:0'));
    expect(got.filter(([subscriber]) => subscriber === 0).map(([, frame]) => frame)).toEqual(['f1', 'f2']);
  });

  it('tells when the last subscriber has the frame, with the time it took', async () => {
    const { clock, fanOut } = setUp();
    let took: number | undefined;
    const slow = new FanOut<number, string>(clock, () => clock.jump(1));
    slow.send('k', 'f', range(FAN_OUT_SLICE + 4), (startedMs, endedMs) => (took = endedMs - startedMs));
    await clock.advance(0);
    expect(took).toBe(FAN_OUT_SLICE + 4);
    fanOut.clear();
  });

  it('drops what is queued when cleared', async () => {
    const { clock, got, fanOut } = setUp();
    fanOut.send('k', 'f1', range(3 * FAN_OUT_SLICE));
    fanOut.clear();
    await clock.advance(10);
    expect(got).toHaveLength(FAN_OUT_SLICE);
    expect(fanOut.sending('k')).toBe(false);
  });
});
