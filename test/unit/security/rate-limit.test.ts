import { describe, expect, it } from 'vitest';
import { RateLimiter, takeToken } from '../../../src/security/rate-limit.js';
import { FakeClock } from '../../support/fake-clock.js';

describe('takeToken', () => {
  it.each([
    // tokens, atMs, nowMs, rate, burst -> allowed, tokens after, retryAfterMs
    [3, 0, 0, 1, 3, true, 2, undefined],
    [0.5, 0, 0, 1, 3, false, 0.5, 500],
    [0, 0, 1_000, 1, 3, true, 0, undefined],
    [0, 0, 10_000, 1, 3, true, 2, undefined],
    [0, 0, 100, 10, 5, true, 0, undefined],
    [0, 0, 50, 10, 5, false, 0.5, 50],
    // A clock step back never refills.
    [0, 1_000, 0, 1, 3, false, 0, 1_000],
  ])('a bucket of %d at %d, now %d, %d/s, burst %d: allowed %s', (tokens, atMs, nowMs, rate, burst, allowed, after, retry) => {
    const { state, decision } = takeToken({ tokens, atMs }, nowMs, rate, burst);
    expect(decision.allowed).toBe(allowed);
    expect(state.tokens).toBeCloseTo(after, 9);
    if (!decision.allowed) expect(decision.retryAfterMs).toBe(retry);
  });
});

describe('RateLimiter', () => {
  it('keeps a bucket per client and refills it with time', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter(clock, { ratePerSecond: 1, burst: 2, maxClients: 100 });
    expect([1, 2, 3].map(() => limiter.take('a').allowed)).toEqual([true, true, false]);
    expect(limiter.exhausted('a')).toBe(true);
    expect(limiter.take('b').allowed).toBe(true);
    await clock.advance(1_000);
    expect(limiter.exhausted('a')).toBe(false);
    expect(limiter.take('a').allowed).toBe(true);
  });

  it('forgets the least recently seen client beyond maxClients', () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter(clock, { ratePerSecond: 1, burst: 1, maxClients: 2 });
    limiter.take('a');
    limiter.take('b');
    limiter.take('a');
    limiter.take('c');
    expect(limiter.size).toBe(2);
    expect(limiter.exhausted('b')).toBe(false);
    expect(limiter.exhausted('a')).toBe(true);
  });

  it('lets everything through when the rate is 0', () => {
    const limiter = new RateLimiter(new FakeClock(), { ratePerSecond: 0, burst: 1, maxClients: 2 });
    expect(Array.from({ length: 10 }, () => limiter.take('a').allowed).every(Boolean)).toBe(true);
    expect(limiter.size).toBe(0);
  });
});
