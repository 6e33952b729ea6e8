import { describe, expect, it } from 'vitest';
import { checkTimestamp, ReplayGuard } from '../../../src/security/replay-guard.js';
import { FakeClock } from '../../support/fake-clock.js';

describe('checkTimestamp', () => {
  it.each([
    [1_000, 1_000, 'fresh'],
    [1_000 - 30_000, 1_000, 'fresh'],
    [1_000 + 30_000, 1_000, 'fresh'],
    [1_000 - 30_001, 1_000, 'too-old'],
    [1_000 + 30_001, 1_000, 'too-new'],
    [0, 1_000_000, 'too-old'],
  ])('timestamp %d at %d with a 30 s window: %s', (timestampMs, nowMs, expected) => {
    expect(checkTimestamp(timestampMs, nowMs, 30_000)).toBe(expected);
  });
});

describe('ReplayGuard', () => {
  it('remembers a nonce for twice the window, then forgets it', async () => {
    const clock = new FakeClock();
    const guard = new ReplayGuard(clock, { windowMs: 1_000, maxNonces: 10 });
    expect(guard.seen('n1')).toBe(false);
    expect(guard.remember('n1')).toBe('remembered');
    expect(guard.seen('n1')).toBe(true);
    expect(guard.remember('n1')).toBe('replayed');
    await clock.advance(1_999);
    expect(guard.remember('n1')).toBe('replayed');
    await clock.advance(1);
    expect(guard.seen('n1')).toBe(false);
    expect(guard.remember('n2')).toBe('remembered');
    expect(guard.size).toBe(1);
  });

  it('refuses new nonces rather than forget one still in its window', async () => {
    const clock = new FakeClock();
    const guard = new ReplayGuard(clock, { windowMs: 1_000, maxNonces: 2 });
    expect(['a', 'b', 'c'].map((nonce) => guard.remember(nonce))).toEqual(['remembered', 'remembered', 'full']);
    expect(guard.remember('a')).toBe('replayed');
    await clock.advance(2_000);
    expect(guard.remember('c')).toBe('remembered');
    expect(guard.size).toBe(1);
  });
});
