import { describe, expect, it } from 'vitest';
import {
  compareVersions,
  formatVersion,
  HybridClock,
  isVersion,
  parseVersion,
} from '../../../src/clock/hlc.js';
import { FakeClock } from '../../support/fake-clock.js';

describe('version encoding', () => {
  it.each([
    { wallMs: 0, counter: 0, peerId: 'a' },
    { wallMs: 1_795_967_828_668, counter: 5, peerId: 'peer-a' },
    { wallMs: 2 ** 47, counter: 0xffffff, peerId: 'peer_b.1:x' },
    { wallMs: 2 ** 48 - 1, counter: 0xabcdef, peerId: 'c' },
  ])('round-trips %o', (parts) => {
    const version = formatVersion(parts);
    expect(isVersion(version)).toBe(true);
    expect(parseVersion(version)).toEqual(parts);
  });

  it.each([
    ['', false],
    ['01a2280642bc.000000.', false],
    ['01a2280642bc.00000.peer', false],
    ['01A2280642BC.000000.peer', false],
    ['01a2280642bc.000000.peer a', false],
    [42, false],
    ['01a2280642bc.000000.peer-a', true],
  ])('isVersion(%j) is %s', (value, expected) => {
    expect(isVersion(value)).toBe(expected);
  });

  it.each([
    // wall time first, then counter, then peer id
    [{ wallMs: 1, counter: 9, peerId: 'z' }, { wallMs: 2, counter: 0, peerId: 'a' }, -1],
    [{ wallMs: 5, counter: 1, peerId: 'z' }, { wallMs: 5, counter: 2, peerId: 'a' }, -1],
    [{ wallMs: 5, counter: 2, peerId: 'a' }, { wallMs: 5, counter: 2, peerId: 'b' }, -1],
    [{ wallMs: 5, counter: 2, peerId: 'b' }, { wallMs: 5, counter: 2, peerId: 'b' }, 0],
    [{ wallMs: 0x10, counter: 0, peerId: 'a' }, { wallMs: 0xf, counter: 0xffffff, peerId: 'a' }, 1],
  ])('compare(%o, %o) = %i', (a, b, expected) => {
    expect(Math.sign(compareVersions(formatVersion(a), formatVersion(b)))).toBe(expected);
  });
});

describe('HybridClock', () => {
  it('follows wall time and never repeats a version', () => {
    const clock = new FakeClock(1_000);
    const hlc = new HybridClock(clock, 'a');
    const v1 = hlc.next();
    const v2 = hlc.next();
    clock.jump(5);
    const v3 = hlc.next();
    expect(compareVersions(v1, v2)).toBeLessThan(0);
    expect(compareVersions(v2, v3)).toBeLessThan(0);
    expect(parseVersion(v3)).toEqual({ wallMs: 1_005, counter: 0, peerId: 'a' });
  });

  it('keeps increasing when the wall clock steps backwards', () => {
    const clock = new FakeClock(10_000);
    const hlc = new HybridClock(clock, 'a');
    const before = hlc.next();
    clock.jump(-5_000);
    const after = hlc.next();
    expect(compareVersions(before, after)).toBeLessThan(0);
    expect(parseVersion(after).wallMs).toBe(10_000);
  });

  it('orders a write after one it observed from a peer whose clock runs ahead', () => {
    const fast = new HybridClock(new FakeClock(50_000), 'fast');
    const slowClock = new FakeClock(40_000);
    const slow = new HybridClock(slowClock, 'slow');
    const remote = fast.next();
    slow.observe(remote);
    const local = slow.next();
    expect(compareVersions(remote, local)).toBeLessThan(0);
    expect(slow.driftMs()).toBe(10_000);
    slowClock.jump(20_000);
    expect(parseVersion(slow.next())).toEqual({ wallMs: 60_000, counter: 0, peerId: 'slow' });
  });

  it('ignores an older remote version', () => {
    const clock = new FakeClock(100);
    const hlc = new HybridClock(clock, 'b');
    const mine = hlc.next();
    hlc.observe(formatVersion({ wallMs: 50, counter: 7, peerId: 'a' }));
    expect(compareVersions(mine, hlc.next())).toBeLessThan(0);
    expect(parseVersion(hlc.next()).wallMs).toBe(100);
  });

  it('rolls the counter over into the wall time', () => {
    const clock = new FakeClock(7);
    const hlc = new HybridClock(clock, 'a');
    hlc.observe(formatVersion({ wallMs: 7, counter: 0xffffff, peerId: 'x' }));
    expect(parseVersion(hlc.next())).toEqual({ wallMs: 8, counter: 0, peerId: 'a' });
  });

  it('writes each version as formatVersion does, across new milliseconds, counters and observed versions', () => {
    const clock = new FakeClock(1_795_967_828_668);
    const hlc = new HybridClock(clock, 'peer-a');
    const seen: string[] = [];
    const steps: (() => void)[] = [
      () => undefined,
      () => clock.jump(1),
      () => hlc.observe(formatVersion({ wallMs: 1_795_967_828_700, counter: 0x1234, peerId: 'z' })),
      () => clock.jump(100),
      () => clock.jump(-50),
    ];
    for (const step of steps) {
      step();
      for (let i = 0; i < 3; i++) {
        const version = hlc.next();
        expect(isVersion(version)).toBe(true);
        expect(formatVersion(parseVersion(version))).toBe(version);
        seen.push(version);
      }
    }
    expect(seen.map((version) => parseVersion(version))).toEqual([
      { wallMs: 1_795_967_828_668, counter: 0, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_668, counter: 1, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_668, counter: 2, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_669, counter: 0, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_669, counter: 1, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_669, counter: 2, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_700, counter: 0x1235, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_700, counter: 0x1236, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_700, counter: 0x1237, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_769, counter: 0, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_769, counter: 1, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_769, counter: 2, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_769, counter: 3, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_769, counter: 4, peerId: 'peer-a' },
      { wallMs: 1_795_967_828_769, counter: 5, peerId: 'peer-a' },
    ]);
    expect([...seen].sort()).toEqual(seen);
  });
});
