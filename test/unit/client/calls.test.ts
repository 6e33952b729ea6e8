import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { PeerCaller } from '../../../src/client/calls.js';
import { RegistryClientError } from '../../../src/client/errors.js';
import { silentClientLogger } from '../../../src/client/logger.js';
import { PeerSelector } from '../../../src/client/peers.js';
import { FakeClock } from '../../support/fake-clock.js';
import { FakeHttp } from '../../support/fake-http.js';

const peers = ['http://a', 'http://b', 'http://c'];

function build(init: { requestTimeoutMs?: number; failoverBudgetMs?: number } = {}) {
  const clock = new FakeClock(0);
  const http = new FakeHttp(() => clock.nowMs());
  const selector = new PeerSelector({ clock, rng: seededRng(3), logger: silentClientLogger }, { peers, backoffBaseMs: 100, backoffMaxMs: 1_000 });
  const caller = new PeerCaller(
    { http, clock, selector, logger: silentClientLogger },
    { requestTimeoutMs: init.requestTimeoutMs ?? 1_000, failoverBudgetMs: init.failoverBudgetMs ?? 5_000 },
  );
  return { clock, http, selector, caller };
}

/** Runs a call while virtual time moves; returns its outcome and when it settled. */
async function run<T>(clock: FakeClock, work: Promise<T>): Promise<{ value?: T; error?: unknown; atMs: number }> {
  let outcome: { value?: T; error?: unknown; atMs: number } | undefined;
  work.then(
    (value) => (outcome = { value, atMs: clock.nowMs() }),
    (error: unknown) => (outcome = { error, atMs: clock.nowMs() }),
  );
  await clock.advanceUntil(() => outcome !== undefined, 120_000, 1);
  return outcome!;
}

const ok = { status: 200, body: { fine: true } };
const GET = { method: 'GET' as const, path: '/v1/services/orders' };

describe('PeerCaller', () => {
  it('fails over on a refused connection, in list order, and sticks to the peer that answered', async () => {
    const { clock, http, caller } = build();
    http.peer('http://b', () => ok).peer('http://c', () => ok);
    const result = await run(clock, caller.call(GET));
    expect(result.value).toEqual({ status: 200, body: { fine: true }, peer: 'http://b' });
    expect(result.atMs).toBe(0);
    await run(clock, caller.call(GET));
    expect(http.requests.map((r) => r.peer)).toEqual(['http://a', 'http://b', 'http://b']);
  });

  it('fails over on 5xx, 429 and 408, but hands any other 4xx to the caller', async () => {
    for (const status of [500, 502, 503, 429, 408]) {
      const { clock, http, caller } = build();
      http.peer('http://a', () => ({ status, body: { code: 'X', message: 'no' } })).peer('http://b', () => ok);
      expect((await run(clock, caller.call(GET))).value?.peer, `status ${status}`).toBe('http://b');
    }
    for (const status of [400, 404, 409, 413]) {
      const { clock, http, caller } = build();
      http.peer('http://a', () => ({ status, body: { code: 'REG_ERR_X', message: 'no' } })).peer('http://b', () => ok);
      const result = await run(clock, caller.call(GET));
      expect(result.value, `status ${status}`).toEqual({ status, body: { code: 'REG_ERR_X', message: 'no' }, peer: 'http://a' });
      expect(http.requests).toHaveLength(1);
    }
  });

  it('times a silent peer out after requestTimeoutMs of clock time, then asks the next', async () => {
    const { clock, http, caller } = build({ requestTimeoutMs: 700 });
    http.peer('http://a', () => 'hang').peer('http://b', () => ok);
    const result = await run(clock, caller.call(GET));
    expect(result.value?.peer).toBe('http://b');
    expect(result.atMs).toBe(700);
    expect(http.seen('http://b', 'GET', '/')[0]!.atMs).toBe(700);
  });

  it('treats a 2xx whose body is not JSON as a failed peer', async () => {
    const { clock, http, caller, selector } = build();
    http.peer('http://a', () => ({ status: 200, body: '<html>' })).peer('http://b', () => ok);
    expect((await run(clock, caller.call(GET))).value?.peer).toBe('http://b');
    expect(selector.snapshot()[0]!.lastFailure).toBe('bad-response');
  });

  it('leaves a busy peer alone for its Retry-After', async () => {
    const { clock, http, caller, selector } = build();
    http.peer('http://a', () => ({ status: 429, body: {}, headers: { 'retry-after': '30' } })).peer('http://b', () => ok);
    await run(clock, caller.call(GET));
    expect(selector.snapshot()[0]!.retryAtMs).toBe(30_000);
  });

  it('with every peer down, keeps trying with backoff and gives up with REG_CLIENT_ERR_NO_PEER_AVAILABLE at the budget', async () => {
    const { clock, http, caller } = build({ failoverBudgetMs: 3_000 });
    const result = await run(clock, caller.call(GET));
    expect(result.error).toBeInstanceOf(RegistryClientError);
    expect((result.error as RegistryClientError).code).toBe('REG_CLIENT_ERR_NO_PEER_AVAILABLE');
    expect((result.error as RegistryClientError).message).toContain('ECONNREFUSED');
    expect(result.atMs).toBeLessThanOrEqual(3_000);
    // Each round tries every peer once, then waits: a bounded number of attempts, spread out.
    expect(http.requests.length).toBeGreaterThanOrEqual(6);
    expect(http.requests.length).toBeLessThan(40);
    const times = http.requests.map((r) => r.atMs);
    expect(new Set(times).size).toBeGreaterThan(2);
  });

  it('recovers when a peer comes back within the budget', async () => {
    const { clock, http, caller } = build({ failoverBudgetMs: 10_000 });
    const work = run(clock, caller.call(GET));
    await clock.advance(1_500);
    http.peer('http://c', () => ok);
    const result = await work;
    expect(result.value?.peer).toBe('http://c');
  });

  it('stops with REG_CLIENT_ERR_CLOSED when its signal aborts, even while waiting for backoff', async () => {
    const { clock, caller } = build();
    const abort = new AbortController();
    const work = run(clock, caller.call(GET, { signal: abort.signal }));
    await clock.advance(10);
    abort.abort();
    const result = await work;
    expect((result.error as RegistryClientError).code).toBe('REG_CLIENT_ERR_CLOSED');
    expect(clock.pendingTimers).toBe(0);
  });
});
