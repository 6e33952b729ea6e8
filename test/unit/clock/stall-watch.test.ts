import { describe, expect, it } from 'vitest';
import { DRAIN_MAX_MS, gatedClock, HOLD_AFTER_DROP_MS, HOLD_AFTER_STALL_MS, HOLD_MAX_MS, STALL_MS } from '../../../src/clock/stall-watch.js';
import { FakeClock } from '../../support/fake-clock.js';
import { steppedWatch } from '../../support/stall-watch.js';

/**
 * The stall watch (src/clock/stall-watch.ts): it tells a loop that stood still from a late look,
 * holds peer calls for a while after (the window http/abandoned-calls.ts uses), and holds the
 * peer's own timers until the connections queued meanwhile are accepted. Time and turns are the
 * test's: nothing sleeps.
 */

describe('the stall watch', () => {
  it('sees nothing before it is started, however late it is asked', () => {
    const { watch, time } = steppedWatch(false);
    time.ms += 60_000;
    expect(watch.holding()).toBe(false);
    expect(watch.draining()).toBe(false);
    expect(watch.stalls).toBe(0);
  });

  it('holds calls for a while after a look comes a stall late, and not after looks on time', () => {
    const { watch, time, stalls, pass } = steppedWatch();
    time.ms += STALL_MS - 1;
    watch.look();
    pass(10_000);
    expect(watch.holding()).toBe(false);
    time.ms += 20_000;
    watch.look();
    expect(stalls).toEqual([20_000]);
    expect(watch.holding()).toBe(true);
    pass(HOLD_AFTER_STALL_MS - 1);
    expect(watch.holding()).toBe(true);
    pass(1);
    expect(watch.holding()).toBe(false);
    expect(watch.stalls).toBe(1);
  });

  it('tells a stall when asked before its own late look came (the queued calls are read first)', () => {
    const { watch, time } = steppedWatch();
    time.ms += 5_000;
    expect(watch.holding()).toBe(true);
    expect(watch.stalls).toBe(1);
    // The timer's own look, a moment later, is not a second stall.
    time.ms += 1;
    watch.look();
    expect(watch.stalls).toBe(1);
  });

  it('holds on while calls are still found closed by their callers, and stops a while after the last', () => {
    const { watch, time, pass } = steppedWatch();
    time.ms += 3_000;
    watch.look();
    pass(HOLD_AFTER_STALL_MS - 10);
    watch.noteDropped(true);
    pass(HOLD_AFTER_DROP_MS - 1);
    expect(watch.holding()).toBe(true);
    pass(1);
    expect(watch.holding()).toBe(false);
    expect(watch.droppedTotal).toBe(1);
  });

  it('is not held on by calls skipped for their deadline, nor past HOLD_MAX_MS by closed ones', () => {
    const { watch, time, pass } = steppedWatch();
    time.ms += 3_000;
    watch.look();
    pass(HOLD_AFTER_STALL_MS - 10);
    watch.noteDropped(false);
    pass(10);
    expect(watch.holding()).toBe(false);
    // Any client can close a call: a steady stream of them ends at the cap all the same.
    time.ms += 3_000;
    watch.look();
    for (let ms = 0; ms < HOLD_MAX_MS - 1; ms += 100) {
      watch.noteDropped(true);
      pass(100);
    }
    watch.noteDropped(true);
    pass(1);
    expect(watch.holding()).toBe(false);
    expect(watch.droppedTotal).toBe(2 + Math.ceil((HOLD_MAX_MS - 1) / 100));
  });
});

describe('the drain after a stall', () => {
  it('runs work at once while the loop keeps its pace', () => {
    const { watch, pass } = steppedWatch();
    pass(5_000);
    const ran: string[] = [];
    watch.afterDrain(() => ran.push('reaper'));
    expect(ran).toEqual(['reaper']);
  });

  it('holds work until a turn passes with no connection accepted', () => {
    const { watch, time, turn } = steppedWatch();
    time.ms += 20_000;
    const ran: string[] = [];
    watch.afterDrain(() => ran.push('reaper'));
    watch.afterDrain(() => ran.push('anti-entropy'));
    expect(watch.draining()).toBe(true);
    // One connection accepted in each turn (libuv accepts one per turn) while the queue lasts.
    for (let k = 0; k < 5; k++) {
      watch.noteConnection();
      turn();
      expect(ran).toEqual([]);
    }
    turn();
    expect(ran).toEqual(['reaper', 'anti-entropy']);
    expect(watch.draining()).toBe(false);
    watch.afterDrain(() => ran.push('next'));
    expect(ran).toEqual(['reaper', 'anti-entropy', 'next']);
  });

  it('stops holding work after DRAIN_MAX_MS however many connections still come', () => {
    const { watch, time, turn } = steppedWatch();
    time.ms += 20_000;
    const ran: string[] = [];
    watch.afterDrain(() => ran.push('reaper'));
    while (time.ms < 20_000 + DRAIN_MAX_MS) {
      watch.noteConnection();
      turn();
      expect(ran).toEqual([]);
      time.ms += 10;
    }
    watch.noteConnection();
    turn();
    expect(ran).toEqual(['reaper']);
  });

  it('is not ended by the turn it began in: a stall seen while reading a request waits for an I/O phase', () => {
    const { watch, time, turn } = steppedWatch();
    time.ms += 20_000;
    // A request read at once (a connection opened before the stall) asks first.
    expect(watch.holding()).toBe(true);
    const ran: string[] = [];
    watch.afterDrain(() => ran.push('reaper'));
    // The check phase of that same turn: no accept could come between, so nothing is told yet.
    turn();
    expect(ran).toEqual([]);
    // The next turn's I/O phase accepts a queued connection.
    watch.noteConnection();
    turn();
    expect(ran).toEqual([]);
    turn();
    expect(ran).toEqual(['reaper']);
  });

  it('drops the held work when stopped, and runs the rest of it when one piece throws', async () => {
    const stopped = steppedWatch();
    stopped.time.ms += 20_000;
    const ran: string[] = [];
    stopped.watch.afterDrain(() => ran.push('reaper'));
    stopped.watch.stop();
    stopped.turn();
    stopped.turn();
    expect(ran).toEqual([]);
    expect(stopped.watch.draining()).toBe(false);

    const { watch, time, turn } = steppedWatch();
    time.ms += 20_000;
    const thrown: unknown[] = [];
    const onError = (error: unknown) => thrown.push(error);
    process.prependListener('uncaughtException', onError);
    try {
      watch.afterDrain(() => {
        throw new Error('a timer that throws');
      });
      watch.afterDrain(() => ran.push('anti-entropy'));
      turn();
      turn();
      expect(ran).toEqual(['anti-entropy']);
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(thrown).toEqual([new Error('a timer that throws')]);
    } finally {
      process.removeListener('uncaughtException', onError);
    }
  });
});

describe('a clock gated by the drain', () => {
  it('holds a timeout that comes due during a drain, runs it after, and never runs a cancelled one', async () => {
    const { watch, time, turn } = steppedWatch();
    const base = new FakeClock(1_000);
    const clock = gatedClock(base, watch);
    const ran: string[] = [];
    clock.setTimeout(() => ran.push('kept'), 100);
    const cancelled = clock.setTimeout(() => ran.push('cancelled'), 100);
    time.ms += 20_000;
    watch.noteConnection();
    await base.advance(100);
    expect(ran).toEqual([]);
    cancelled.cancel();
    watch.noteConnection();
    turn();
    turn();
    expect(ran).toEqual(['kept']);
    expect(clock.nowMs()).toBe(base.nowMs());
  });

  it('runs an interval held during a drain once for the ticks it missed, then at its pace', async () => {
    const { watch, time, turn } = steppedWatch();
    const base = new FakeClock(1_000);
    const clock = gatedClock(base, watch);
    let ticks = 0;
    const interval = clock.setInterval(() => ticks++, 100);
    await base.advance(100);
    expect(ticks).toBe(1);
    time.ms += 20_000;
    watch.noteConnection();
    await base.advance(500);
    expect(ticks).toBe(1);
    turn();
    turn();
    expect(ticks).toBe(2);
    await base.advance(100);
    expect(ticks).toBe(3);
    interval.cancel();
    await base.advance(1_000);
    expect(ticks).toBe(3);
  });
});
