import { describe, expect, it } from 'vitest';
import { ClientRateLimits, rateLimitedMessage, rateLimitRefusal, retrySecondsOf, type RateLimitSettings } from '../../../../src/http/access/rate-limit.js';
import { FakeClock } from '../../../support/fake-clock.js';

const LIMITS: RateLimitSettings = { rateLimitPerSecond: 2, rateLimitLoopbackPerSecond: 0, rateLimitBurst: 3, rateLimitClientsMax: 100 };

describe('retrySecondsOf', () => {
  it.each([
    [0, 1],
    [1, 1],
    [999, 1],
    [1_000, 1],
    [1_001, 2],
    [12_500, 13],
  ])('%d ms: Retry-After %d s', (retryAfterMs, seconds) => {
    expect(retrySecondsOf(retryAfterMs)).toBe(seconds);
  });
});

describe('rateLimitedMessage', () => {
  it.each([
    [
      'token',
      'deployer',
      'too many requests from token deployer: more than 2/s after a burst of 3; retry in 4 s, or raise limits.rateLimitPerSecond and limits.rateLimitBurst',
    ],
    [
      'address',
      '10.0.0.7',
      'too many requests from address 10.0.0.7 (requests without a valid token): more than 2/s after a burst of 3; retry in 4 s, ' +
        'or raise limits.rateLimitPerSecond and limits.rateLimitBurst; clients behind one proxy or NAT share its address: tokens are limited one by one',
    ],
    [
      'loopback',
      '127.0.0.1',
      'too many requests from address 127.0.0.1 (requests without a valid token): more than 0/s after a burst of 3; retry in 4 s, ' +
        'or raise limits.rateLimitLoopbackPerSecond and limits.rateLimitBurst; clients behind one proxy or NAT share its address: tokens are limited one by one',
    ],
  ] as const)('names the %s limit and its setting', (kind, who, message) => {
    expect(rateLimitedMessage(kind, who, LIMITS, 4)).toBe(message);
  });
});

describe('rateLimitRefusal', () => {
  it('is nothing for an allowed request, a 429 with Retry-After otherwise', () => {
    expect(rateLimitRefusal({ allowed: true }, 'token', 'a', LIMITS)).toBeUndefined();
    const refusal = rateLimitRefusal({ allowed: false, retryAfterMs: 1_500 }, 'token', 'a', LIMITS);
    expect(refusal).toMatchObject({ code: 'REG_ERR_RATE_LIMITED', status: 429, retryAfterSeconds: 2 });
    expect(refusal?.message).toContain('retry in 2 s');
  });
});

describe('ClientRateLimits', () => {
  it('counts a token apart from its address, and addresses apart from each other', async () => {
    const clock = new FakeClock();
    const limits = new ClientRateLimits(clock, LIMITS);
    const burst = (address: string, token?: string) => Array.from({ length: 4 }, () => limits.check(address, token)?.status);
    expect(burst('10.0.0.7')).toEqual([undefined, undefined, undefined, 429]);
    expect(burst('10.0.0.7', 'deployer')).toEqual([undefined, undefined, undefined, 429]);
    expect(burst('10.0.0.8')).toEqual([undefined, undefined, undefined, 429]);
    expect(limits.check('10.0.0.7', 'deployer')?.message).toMatch(/^too many requests from token deployer:/);
    await clock.advance(500);
    expect(limits.check('10.0.0.7')).toBeUndefined();
    expect(limits.check('10.0.0.7')?.retryAfterSeconds).toBe(1);
  });

  it('leaves loopback callers alone unless their own limit is set', () => {
    const clock = new FakeClock();
    const open = new ClientRateLimits(clock, LIMITS);
    for (let i = 0; i < 50; i++) expect(open.check('127.0.0.1')).toBeUndefined();
    const limited = new ClientRateLimits(clock, { ...LIMITS, rateLimitLoopbackPerSecond: 1 });
    const answers = Array.from({ length: 4 }, () => limited.check('::1')?.message);
    expect(answers.slice(0, 3)).toEqual([undefined, undefined, undefined]);
    expect(answers[3]).toContain('limits.rateLimitLoopbackPerSecond');
  });

  it('throttles an address whose peer calls keep being refused, until its bucket refills', async () => {
    const clock = new FakeClock();
    const limits = new ClientRateLimits(clock, LIMITS);
    for (let i = 0; i < 3; i++) {
      expect(limits.checkPeerRefusals('10.0.0.9')).toBeUndefined();
      limits.countPeerRefusal('10.0.0.9');
    }
    expect(limits.checkPeerRefusals('10.0.0.9')).toMatchObject({
      code: 'REG_ERR_RATE_LIMITED',
      message: 'too many refused peer requests from this address; retry later',
      retryAfterSeconds: 1,
    });
    // Client requests from that address have their own bucket.
    expect(limits.check('10.0.0.9')).toBeUndefined();
    await clock.advance(500);
    expect(limits.checkPeerRefusals('10.0.0.9')).toBeUndefined();
  });

  it('limits nothing when rate limiting is off', () => {
    const limits = new ClientRateLimits(new FakeClock(), { ...LIMITS, rateLimitPerSecond: 0 });
    for (let i = 0; i < 50; i++) {
      expect(limits.check('10.0.0.7')).toBeUndefined();
      limits.countPeerRefusal('10.0.0.7');
    }
    expect(limits.checkPeerRefusals('10.0.0.7')).toBeUndefined();
  });
});
