import { describe, expect, it } from 'vitest';
import { defaultsOf, limitSettings } from '../../../src/config/settings.js';
import { isLoopback, RateLimiter, rateClientOf, takeToken } from '../../../src/security/rate-limit.js';
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

describe('isLoopback', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.3.2.1', true],
    ['::1', true],
    ['0:0:0:0:0:0:0:1', true],
    ['::ffff:127.0.0.1', true],
    ['::FFFF:127.0.0.9', true],
    ['10.0.0.7', false],
    ['128.0.0.1', false],
    ['::ffff:10.0.0.7', false],
    ['::', false],
    ['1::1', false],
    ['fe80::1', false],
    ['::11', false],
    ['', false],
    ['localhost', false],
  ])('%s: %s', (address, loopback) => {
    expect(isLoopback(address)).toBe(loopback);
  });
});

describe('rateClientOf', () => {
  it('counts a valid token on its own, whatever the address; other requests by address, loopback apart', () => {
    expect(rateClientOf('127.0.0.1', 'deployer')).toEqual({ kind: 'token', key: 'token:deployer' });
    expect(rateClientOf('10.0.0.7', 'deployer')).toEqual({ kind: 'token', key: 'token:deployer' });
    expect(rateClientOf('10.0.0.7', undefined)).toEqual({ kind: 'address', key: 'address:10.0.0.7' });
    expect(rateClientOf('::1', undefined)).toEqual({ kind: 'loopback', key: 'address:::1' });
  });
});

describe('the default rates', () => {
  const limits = defaultsOf(limitSettings);
  const defaults = () => {
    const clock = new FakeClock();
    return { clock, limiter: new RateLimiter(clock, { ratePerSecond: limits.rateLimitPerSecond, burst: limits.rateLimitBurst, maxClients: limits.rateLimitClientsMax }) };
  };
  /** `count` requests of one client spread evenly at `perSecond`; how many were refused. */
  const send = async (clock: FakeClock, limiter: RateLimiter, count: number, perSecond: number): Promise<number> => {
    let refused = 0;
    const stepMs = 1_000 / perSecond;
    let dueMs = clock.nowMs();
    for (let i = 0; i < count; i++) {
      dueMs += stepMs;
      if (Math.floor(dueMs) > clock.nowMs()) await clock.advance(Math.floor(dueMs) - clock.nowMs());
      if (!limiter.take('address:10.0.0.7').allowed) refused++;
    }
    return refused;
  };

  it('leave loopback callers unlimited', () => {
    expect(limits.rateLimitLoopbackPerSecond).toBe(0);
  });

  // A peer serves some 19,000 registers/s (bench/RESULTS.md): these loads go at 20,000/s.
  it('take 10,000 registrations and their 10,000 first heartbeats from one address at the speed of a peer', async () => {
    const { clock, limiter } = defaults();
    expect(await send(clock, limiter, 20_000, 20_000)).toBe(0);
  });

  it('take a mass restart of 100,000 instances behind one address, then their heartbeats every 10 s', async () => {
    const { clock, limiter } = defaults();
    expect(await send(clock, limiter, 100_000, 20_000)).toBe(0);
    expect(await send(clock, limiter, 300_000, 10_000)).toBe(0);
  });

  it('still refuse a client that floods one peer past its capacity', async () => {
    const { clock, limiter } = defaults();
    expect(await send(clock, limiter, 200_000, 50_000)).toBeGreaterThan(50_000);
  });
});
