import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { backoffDelayMs, classifyStatus, parseRetryAfterMs } from '../../../src/client/failover.js';
import { silentClientLogger } from '../../../src/client/logger.js';
import { PeerSelector } from '../../../src/client/peers.js';
import { FakeClock } from '../../support/fake-clock.js';

describe('classifyStatus', () => {
  const table: [number, ReturnType<typeof classifyStatus>][] = [
    [200, { kind: 'answer' }],
    [201, { kind: 'answer' }],
    [400, { kind: 'answer' }],
    [404, { kind: 'answer' }],
    [409, { kind: 'answer' }],
    [413, { kind: 'answer' }],
    [408, { kind: 'failover', reason: 'timeout' }],
    [429, { kind: 'failover', reason: 'busy' }],
    [500, { kind: 'failover', reason: 'server-error' }],
    [502, { kind: 'failover', reason: 'server-error' }],
    [503, { kind: 'failover', reason: 'server-error' }],
    [504, { kind: 'failover', reason: 'server-error' }],
  ];
  for (const [status, verdict] of table) it(`${status}`, () => expect(classifyStatus(status)).toEqual(verdict));
});

describe('parseRetryAfterMs', () => {
  const nowMs = Date.UTC(2026, 0, 1, 12, 0, 0);
  const table: [string | undefined, number | undefined][] = [
    [undefined, undefined],
    ['5', 5_000],
    [' 0 ', 0],
    ['Thu, 01 Jan 2026 12:00:30 GMT', 30_000],
    ['Thu, 01 Jan 2026 11:00:00 GMT', 0],
    ['soon', undefined],
    ['-3', undefined],
  ];
  for (const [header, expected] of table) it(`${JSON.stringify(header)}`, () => expect(parseRetryAfterMs(header, nowMs)).toBe(expected));
});

describe('backoffDelayMs', () => {
  const policy = { backoffBaseMs: 100, backoffMaxMs: 5_000 };
  const table: [number, number, number][] = [
    // failures, random, expected
    [0, 0.5, 0],
    [1, 0, 50],
    [1, 0.999, 100],
    [2, 0, 100],
    [3, 0.5, 300],
    [6, 1, 3_200],
    [7, 0, 2_500],
    [7, 1, 5_000],
    [1_000, 1, 5_000],
  ];
  for (const [failures, random, expected] of table) {
    it(`${failures} failures, random ${random}`, () => expect(backoffDelayMs(failures, policy, random)).toBe(expected));
  }
});

describe('PeerSelector', () => {
  const peers = ['http://a', 'http://b', 'http://c'];
  const build = () => {
    const clock = new FakeClock(0);
    const selector = new PeerSelector({ clock, rng: seededRng(7), logger: silentClientLogger }, { peers, backoffBaseMs: 100, backoffMaxMs: 1_000 });
    return { clock, selector };
  };

  it('sticks to the first peer while it answers', () => {
    const { selector } = build();
    for (let i = 0; i < 5; i++) {
      expect(selector.choose()).toEqual({ peer: 'http://a' });
      selector.succeeded('http://a');
    }
  });

  it('moves to the next peer on a failure and does not fail back when the old one recovers', async () => {
    const { clock, selector } = build();
    selector.failed('http://a', 'connection');
    expect(selector.choose()).toEqual({ peer: 'http://b' });
    selector.succeeded('http://b');
    await clock.advance(10_000);
    expect(selector.choose()).toEqual({ peer: 'http://b' });
    expect(selector.current).toBe('http://b');
  });

  it('skips peers that are backing off, in list order, wrapping around', () => {
    const { selector } = build();
    selector.failed('http://a', 'connection');
    selector.failed('http://b', 'server-error');
    expect(selector.choose()).toEqual({ peer: 'http://c' });
    selector.failed('http://c', 'timeout');
    const choice = selector.choose();
    expect('waitMs' in choice).toBe(true);
  });

  it('makes callers wait for the first peer out of backoff, and the backoff grows per consecutive failure', async () => {
    const { clock, selector } = build();
    for (const peer of peers) selector.failed(peer, 'connection');
    const states = selector.snapshot();
    const firstRetryMs = Math.min(...states.map((s) => s.retryAtMs));
    const choice = selector.choose() as { waitMs: number };
    expect(choice.waitMs).toBe(firstRetryMs);
    expect(choice.waitMs).toBeGreaterThanOrEqual(50);
    expect(choice.waitMs).toBeLessThanOrEqual(100);
    await clock.advance(choice.waitMs);
    const next = selector.choose() as { peer: string };
    expect(states.find((s) => s.retryAtMs === firstRetryMs)!.url).toBe(next.peer);
    // The second failure in a row doubles the ceiling.
    selector.failed(next.peer, 'connection');
    const state = selector.snapshot().find((s) => s.url === next.peer)!;
    expect(state.consecutiveFailures).toBe(2);
    expect(state.retryAtMs - clock.nowMs()).toBeGreaterThanOrEqual(100);
    expect(state.retryAtMs - clock.nowMs()).toBeLessThanOrEqual(200);
    // A success starts it over.
    selector.succeeded(next.peer);
    expect(selector.snapshot().find((s) => s.url === next.peer)).toMatchObject({ consecutiveFailures: 0, retryAtMs: 0 });
  });

  it('honours a Retry-After longer than the backoff', () => {
    const { clock, selector } = build();
    selector.failed('http://a', 'busy', 30_000);
    expect(selector.snapshot()[0]!.retryAtMs).toBe(clock.nowMs() + 30_000);
  });

  it('a failure of a peer that is not the current one does not move the client', () => {
    const { selector } = build();
    selector.failed('http://c', 'connection');
    expect(selector.current).toBe('http://a');
    expect(selector.choose()).toEqual({ peer: 'http://a' });
  });

  it('with one peer, waits for it rather than giving up', () => {
    const clock = new FakeClock(0);
    const selector = new PeerSelector({ clock, rng: seededRng(1), logger: silentClientLogger }, { peers: ['http://only'], backoffBaseMs: 100, backoffMaxMs: 1_000 });
    selector.failed('http://only', 'connection');
    expect('waitMs' in selector.choose()).toBe(true);
    expect(selector.current).toBe('http://only');
  });
});
