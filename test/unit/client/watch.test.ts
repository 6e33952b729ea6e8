import { afterEach, describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { createRegistryClient, type RegistryClient } from '../../../src/client/client.js';
import type { Instance, ServiceUpdate, SubscribeHandlers } from '../../../src/client/types.js';
import { FakeClock } from '../../support/fake-clock.js';
import { fakeInstance, fakePeerState, fakeRegistryPeer, FakeHttp, sse, type FakePeerState, type FakeStream } from '../../support/fake-http.js';
import { settled } from '../../support/settle.js';

const peers = ['http://a', 'http://b', 'http://c'];
let client: RegistryClient | undefined;

afterEach(async () => {
  await client?.close();
  client = undefined;
});

const i1 = fakeInstance('i1', { zone: 'z1' });
const i2 = fakeInstance('i2', { zone: 'z2', weight: 3 });
const i3 = fakeInstance('i3', { zone: 'z1' });
const snapshot = (revision: number, instances: Instance[], service = 'orders') => sse('snapshot', { namespace: 'default', service, revision, instances }, revision);
const delta = (revision: number, change: { added?: Instance[]; changed?: Instance[]; removed?: string[] }, service = 'orders') =>
  sse(
    'delta',
    { namespace: 'default', service, revision, added: change.added ?? [], changed: change.changed ?? [], removed: (change.removed ?? []).map((instanceId) => ({ instanceId })) },
    revision,
  );

function build(options: { staleAfterMs?: number; watchIdleTimeoutMs?: number; discoverTimeoutMs?: number } = {}) {
  const clock = new FakeClock(0);
  const http = new FakeHttp(() => clock.nowMs());
  const states = new Map<string, FakePeerState>(peers.map((peer) => [peer, fakePeerState()]));
  for (const peer of peers) http.peer(peer, fakeRegistryPeer(peer, states.get(peer)!));
  client = createRegistryClient({ peers, clock, rng: seededRng(9), http, requestTimeoutMs: 500, backoffBaseMs: 100, backoffMaxMs: 1_000, ...options });
  /** The latest watch stream opened on `peer`. */
  const stream = (peer: string): FakeStream => {
    const streams = states.get(peer)!.streams;
    if (streams.length === 0) throw new Error(`no stream on ${peer}`);
    return streams.at(-1)!;
  };
  const flush = () => clock.advance(0);
  /** Subscribes to `orders` and feeds the stream on peer a its first snapshot. */
  const subscribedWith = async (instances: Instance[], handlers: SubscribeHandlers = {}) => {
    client!.subscribe('orders', handlers);
    await flush();
    stream('http://a').push(snapshot(3, instances));
    await flush();
  };
  return { clock, http, states, client, stream, flush, subscribedWith };
}

/** Everything a subscriber was told, as short strings. */
function recorder() {
  const calls: string[] = [];
  const updates: ServiceUpdate[] = [];
  return {
    calls,
    updates,
    handlers: {
      onUp: (i: Instance) => calls.push(`up ${i.instanceId}`),
      onDown: (i: Instance) => calls.push(`down ${i.instanceId}`),
      onChange: (u: ServiceUpdate) => {
        updates.push(u);
        calls.push(`change [${u.instances.map((i) => i.instanceId).join(',')}]`);
      },
    },
  };
}

describe('watch stream and subscribe', () => {
  it('checks the peer is ready, opens one stream, and turns its snapshot and deltas into onUp / onDown / onChange', async () => {
    const { http, client, stream, flush } = build();
    const seen = recorder();
    client.subscribe('orders', seen.handlers);
    await flush();
    expect(http.requests.map((r) => `${r.peer} ${r.path}`)).toEqual(['http://a /readyz', 'http://a /v1/watch?services=orders&namespace=default']);
    stream('http://a').push(': watching orders in default\n\n' + snapshot(3, [i1, i2]));
    await flush();
    expect(seen.calls).toEqual(['up i1', 'up i2', 'change [i1,i2]']);

    const i2v2 = { ...i2, version: '000000000009.000000.peer-a', weight: 5 };
    stream('http://a').push(delta(5, { added: [i3], removed: ['i1'], changed: [i2v2] }));
    await flush();
    expect(seen.calls.slice(3)).toEqual(['up i3', 'down i1', 'change [i2,i3]']);
    expect(seen.updates.at(-1)).toMatchObject({ up: [{ instanceId: 'i3' }], down: [{ instanceId: 'i1' }], changed: [{ instanceId: 'i2', weight: 5 }] });

    // Not UP any more: down for subscribers, gone from discover; still listed with status 'all'.
    stream('http://a').push(delta(6, { changed: [{ ...i3, status: 'OUT_OF_SERVICE', version: '000000000010.000000.peer-a' }] }));
    await flush();
    expect(seen.calls.slice(6)).toEqual(['down i3', 'change [i2]']);
    expect((await client.discover('orders')).instances.map((i) => i.instanceId)).toEqual(['i2']);
    expect((await client.discover('orders', { status: 'all' })).instances.map((i) => i.instanceId)).toEqual(['i2', 'i3']);
  });

  it('after a reconnection to another peer, reports nothing when its snapshot agrees, and only what it lacks as down', async () => {
    const { client, stream, flush, subscribedWith } = build();
    const seen = recorder();
    await subscribedWith([i1, i2, i3], seen.handlers);
    seen.calls.length = 0;

    stream('http://a').fail();
    await flush();
    expect(client.currentPeer).toBe('http://b');
    // Until b's snapshot arrives, nothing is reported and the old list is served.
    expect(seen.calls).toEqual([]);
    expect((await client.discover('orders')).instances).toHaveLength(3);
    // Revisions are per peer: b's are lower, and its snapshot is the truth all the same.
    stream('http://b').push(snapshot(1, [i1, i2, i3]));
    await flush();
    expect(seen.calls).toEqual([]);

    stream('http://b').fail();
    await flush();
    stream('http://c').push(snapshot(7, [i1, i3]));
    await flush();
    expect(seen.calls).toEqual(['down i2', 'change [i1,i3]']);
  });

  it('ignores a delta before the snapshot of its stream, and a delta out of revision order', async () => {
    const { client, stream, flush } = build();
    const seen = recorder();
    client.subscribe('orders', seen.handlers);
    await flush();
    stream('http://a').push(delta(2, { added: [i3] }));
    stream('http://a').push(snapshot(3, [i1]));
    stream('http://a').push(delta(3, { added: [i2] }));
    stream('http://a').push(delta(4, { added: [i3] }));
    await flush();
    expect(seen.calls).toEqual(['up i1', 'change [i1]', 'up i3', 'change [i1,i3]']);
  });

  it('keeps the last list while every peer is down, flagged stale after staleAfterMs, and fresh again after a snapshot', async () => {
    const { clock, http, client, stream, flush } = build({ staleAfterMs: 3_000 });
    const first = client.discover('orders');
    await flush();
    stream('http://a').push(snapshot(3, [i1, i2]));
    await flush();
    expect(await first).toMatchObject({ stale: false, updatedAtMs: 0, peer: 'http://a' });
    await clock.advance(1_000);
    stream('http://a').push(': keep-alive\n\n');
    await flush();
    expect((await client.discover('orders')).updatedAtMs).toBe(1_000);

    for (const peer of peers) http.down(peer);
    await clock.advance(2_900);
    const shortly = await client.discover('orders');
    expect(shortly).toMatchObject({ stale: false, updatedAtMs: 1_000 });
    await clock.advance(200);
    const later = await client.discover('orders');
    expect(later.stale).toBe(true);
    expect(later.updatedAtMs).toBe(1_000);
    expect(later.instances.map((i) => i.instanceId)).toEqual(['i1', 'i2']);

    // A peer comes back: the stream reconnects (after its backoff) and its snapshot refreshes the list.
    http.peer('http://b', fakeRegistryPeer('http://b', fakePeerState()));
    await clock.advanceUntil(() => http.seen('http://b', 'GET', '/v1/watch').length > 0, 10_000);
    const reconnectedAtMs = clock.nowMs();
    expect(http.streams.at(-1)!.peer).toBe('http://b');
    http.streams.at(-1)!.stream.push(snapshot(1, [i2]));
    await flush();
    expect(await client.discover('orders')).toMatchObject({ stale: false, updatedAtMs: reconnectedAtMs, peer: 'http://b', instances: [{ instanceId: 'i2' }] });
  });

  it('skips a peer that is not ready (still syncing), and fails over when the peer ends the stream', async () => {
    const { http, client, stream, states, flush } = build();
    states.get('http://a')!.ready = false;
    client.subscribe('orders', {});
    await flush();
    expect(http.seen('http://a', 'GET', '/v1/watch')).toHaveLength(0);
    expect(client.currentPeer).toBe('http://b');
    stream('http://b').push(snapshot(1, [i1]));
    stream('http://b').end();
    await flush();
    expect(client.currentPeer).toBe('http://c');
    expect(client.peerStates().map((s) => s.lastFailure)).toEqual(['server-error', 'stream-ended', null]);
    expect(http.seen('http://c', 'GET', '/v1/watch')).toHaveLength(1);
  });

  it('fails over on a 5xx answer to the watch', async () => {
    const { http, client, flush } = build();
    http.peer('http://a', (r) => (r.path === '/readyz' ? { status: 200 } : { status: 502, body: 'bad gateway' }));
    client.subscribe('orders', {});
    await flush();
    expect(client.currentPeer).toBe('http://b');
    expect(http.seen('http://b', 'GET', '/v1/watch')).toHaveLength(1);
  });

  it('leaves a peer that answers 429 alone for its Retry-After', async () => {
    const { clock, http, client, flush } = build();
    http.peer('http://a', (r) => (r.path === '/readyz' ? { status: 200 } : { status: 429, body: {}, headers: { 'retry-after': '20' } }));
    client.subscribe('orders', {});
    await flush();
    expect(client.currentPeer).toBe('http://b');
    expect(client.peerStates()[0]).toMatchObject({ lastFailure: 'busy', retryAtMs: 20_000 });
    http.down('http://b');
    http.down('http://c');
    await clock.advanceUntil(() => http.seen('http://a', 'GET', '/v1/watch').length === 2, 30_000, 10);
    expect(clock.nowMs()).toBeGreaterThanOrEqual(20_000);
  });

  it('does not take a 4xx answer to the watch for a dead peer: it pauses and asks the same peer again', async () => {
    const { clock, http, client, flush } = build();
    http.peer('http://a', (r) => (r.path === '/readyz' ? { status: 200 } : { status: 400, body: { code: 'REG_ERR_VALIDATION', message: 'services: no' } }));
    client.subscribe('orders', {});
    await flush();
    expect(client.currentPeer).toBe('http://a');
    await clock.advance(999);
    expect(http.seen('http://a', 'GET', '/v1/watch')).toHaveLength(1);
    await clock.advance(1);
    expect(http.seen('http://a', 'GET', '/v1/watch')).toHaveLength(2);
    expect(http.seen('http://b', 'GET', '/')).toHaveLength(0);
  });

  it('reconnects to the same peer after a dropped event, with a short pause', async () => {
    const { clock, http, client, stream, flush } = build();
    client.subscribe('orders', {});
    await flush();
    stream('http://a').push(snapshot(1, [i1]) + sse('dropped', { code: 'REG_ERR_WATCH_TOO_SLOW', message: 'too slow' }));
    await flush();
    const droppedAtMs = clock.nowMs();
    await clock.advanceUntil(() => http.seen('http://a', 'GET', '/v1/watch').length === 2, 1_000);
    expect(clock.nowMs() - droppedAtMs).toBeGreaterThanOrEqual(100);
    expect(client.currentPeer).toBe('http://a');
    expect(client.peerStates()[0]!.consecutiveFailures).toBe(0);
  });

  it('takes a stream silent past watchIdleTimeoutMs for dead, but not one that gets keep-alives', async () => {
    const { clock, http, client, stream, flush } = build({ watchIdleTimeoutMs: 10_000 });
    client.subscribe('orders', {});
    await flush();
    stream('http://a').push(snapshot(1, [i1]));
    for (let i = 0; i < 5; i++) {
      await clock.advance(9_000);
      stream('http://a').push(': keep-alive\n\n');
    }
    await flush();
    expect(http.seen(null, 'GET', '/v1/watch')).toHaveLength(1);
    await clock.advance(10_000);
    expect(stream('http://a').aborted).toBe(true);
    expect(http.seen('http://b', 'GET', '/v1/watch')).toHaveLength(1);
    expect(client.peerStates()[0]!.lastFailure).toBe('timeout');
  });

  it('times out a peer that accepts the connection but never answers', async () => {
    const { clock, http, client, flush } = build();
    http.peer('http://a', () => 'hang');
    client.subscribe('orders', {});
    await flush();
    await clock.advance(499);
    expect(http.seen('http://b', 'GET', '/')).toHaveLength(0);
    await clock.advance(1);
    expect(http.seen('http://b', 'GET', '/v1/watch')).toHaveLength(1);
  });

  it('fails over on an event it cannot read', async () => {
    const { client, stream, flush } = build();
    client.subscribe('orders', {});
    await flush();
    stream('http://a').push(sse('snapshot', { service: 'orders', revision: 'x', instances: [] }));
    await flush();
    expect(client.peerStates()[0]!.lastFailure).toBe('bad-response');
    expect(client.currentPeer).toBe('http://b');
  });

  it('watching another service restarts the stream on the same peer with both, and reports nothing for the first', async () => {
    const { http, client, stream, flush, subscribedWith } = build();
    const seen = recorder();
    await subscribedWith([i1], seen.handlers);
    const billing = client.discover('billing');
    const payments = client.discover('payments');
    await flush();
    expect(stream('http://a')).not.toBe(undefined);
    expect(http.seen('http://a', 'GET', '/v1/watch').map((r) => r.path)).toEqual([
      '/v1/watch?services=orders&namespace=default',
      '/v1/watch?services=orders,billing,payments&namespace=default',
    ]);
    stream('http://a').push(snapshot(3, [i1]) + snapshot(0, [], 'billing') + snapshot(0, [], 'payments'));
    await flush();
    expect(await billing).toMatchObject({ service: 'billing', instances: [], stale: false });
    expect(await payments).toMatchObject({ service: 'payments', instances: [] });
    expect(seen.calls).toEqual(['up i1', 'change [i1]']);
    expect(client.watchedServices).toEqual(['orders', 'billing', 'payments']);
  });

  it('a late subscriber first hears the instances already up; a throwing callback stops neither the others nor the stream', async () => {
    const { client, stream, flush } = build();
    const early = recorder();
    client.subscribe('orders', {
      onUp: () => {
        throw new Error('bug in the application');
      },
    });
    client.subscribe('orders', early.handlers);
    await flush();
    stream('http://a').push(snapshot(1, [i1, i2]));
    await flush();
    const late = recorder();
    const subscription = client.subscribe('orders', late.handlers);
    expect(late.calls).toEqual([]); // not before subscribe() returns
    await flush();
    expect(late.calls).toEqual(['up i1', 'up i2', 'change [i1,i2]']);
    subscription.close();
    stream('http://a').push(delta(2, { added: [i3] }));
    await flush();
    expect(late.calls).toHaveLength(3);
    expect(early.calls).toEqual(['up i1', 'up i2', 'change [i1,i2]', 'up i3', 'change [i1,i2,i3]']);
  });

  it('discover waits for the first list of a new service, and gives up with REG_CLIENT_ERR_DISCOVERY_UNAVAILABLE', async () => {
    const { clock, http, client } = build({ discoverTimeoutMs: 2_000 });
    for (const peer of peers) http.down(peer);
    const startMs = clock.nowMs();
    const error = await settled(clock, client.discover('orders')).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'REG_CLIENT_ERR_DISCOVERY_UNAVAILABLE' });
    expect(clock.nowMs() - startMs).toBe(2_000);
    await expect(client.discover('bad/name')).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_INVALID_ARGUMENT' });
    await expect(client.discover('orders', { status: 'some' as 'all' })).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_INVALID_ARGUMENT' });
  });

  it('pick chooses among the UP instances by strategy, and says so when there is none', async () => {
    const { client, stream, flush } = build();
    const first = client.pick('orders');
    await flush();
    stream('http://a').push(snapshot(1, [i1, i2, i3, fakeInstance('i4', { status: 'STARTING' })]));
    await flush();
    const rr = [(await first).instanceId];
    for (let i = 0; i < 3; i++) rr.push((await client.pick('orders', 'round-robin')).instanceId);
    expect(rr).toEqual(['i1', 'i2', 'i3', 'i1']);
    expect((await client.pick('orders', { zone: 'z2' })).instanceId).toBe('i2');
    const zoned = [];
    for (let i = 0; i < 4; i++) zoned.push((await client.pick('orders', { zone: 'z1' })).instanceId);
    expect(zoned).toEqual(['i1', 'i3', 'i1', 'i3']);
    const weighted = new Map<string, number>();
    for (let i = 0; i < 500; i++) {
      const id = (await client.pick('orders', 'weighted')).instanceId;
      weighted.set(id, (weighted.get(id) ?? 0) + 1);
    }
    // i2 weighs 3, the others 1: about 60% of the picks.
    expect(weighted.get('i2')! / 500).toBeGreaterThan(0.5);
    expect(weighted.get('i2')! / 500).toBeLessThan(0.7);
    await expect(client.pick('orders', 'fastest' as 'random')).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_INVALID_ARGUMENT' });

    stream('http://a').push(delta(2, { removed: ['i1', 'i2', 'i3'] }));
    await flush();
    await expect(client.pick('orders')).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_NO_INSTANCE' });
  });

  it('close() ends the stream and every timer; later calls fail with REG_CLIENT_ERR_CLOSED', async () => {
    const { clock, client, stream, flush, subscribedWith } = build();
    const seen = recorder();
    await subscribedWith([i1], seen.handlers);
    await client.close();
    await flush();
    expect(stream('http://a').aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    expect(seen.calls).toEqual(['up i1', 'change [i1]']);
    await expect(client.discover('orders')).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_CLOSED' });
    expect(() => client.subscribe('orders', {})).toThrow(/closed/);
    await expect(client.pick('orders')).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_CLOSED' });
  });

  it('refuses a 101st service with REG_CLIENT_ERR_TOO_MANY_SERVICES', async () => {
    const { client } = build();
    for (let i = 0; i < 100; i++) client.subscribe(`s${i}`, {});
    expect(() => client.subscribe('one-more', {})).toThrow(expect.objectContaining({ code: 'REG_CLIENT_ERR_TOO_MANY_SERVICES' }));
  });
});

describe('watch fallback to long polls (push-pull)', () => {
  it('long-polls a peer that serves too many watchers, then tries the stream again', async () => {
    const { clock, http, client, flush, states } = build();
    const polls: string[] = [];
    let streamRefused = true;
    const listing = (revision: number, instances: Instance[]) => ({ status: 200, body: { namespace: 'default', service: 'orders', revision, protected: false, instances } });
    const fallback = fakeRegistryPeer('http://a', states.get('http://a')!);
    http.peer('http://a', (request) => {
      if (request.path.startsWith('/v1/watch') && streamRefused) {
        return { status: 429, body: { code: 'REG_ERR_TOO_MANY_WATCHERS', message: 'long-poll instead' }, headers: { 'retry-after': '5' } };
      }
      if (request.path.startsWith('/v1/services/orders?')) {
        polls.push(request.path);
        if (polls.length === 1) return listing(3, [i1]);
        if (polls.length === 2) return listing(4, [i1, i2]);
        return 'hang';
      }
      return fallback(request);
    });
    const { calls, handlers } = recorder();
    client.subscribe('orders', handlers);
    await flush();
    await clock.advance(0);
    expect(polls[0]).toBe('/v1/services/orders?namespace=default&status=all');
    expect(polls[1]).toMatch(/^\/v1\/services\/orders\?namespace=default&status=all&index=3&wait=\d+ms$/);
    expect(polls[2]).toMatch(/index=4&/);
    expect(calls).toEqual(['up i1', 'change [i1]', 'up i2', 'change [i1,i2]']);
    expect(client.currentPeer).toBe('http://a');
    expect(http.seen('http://a', 'GET', '/v1/watch')).toHaveLength(1);
    streamRefused = false;
    await clock.advance(30_000);
    expect(http.seen('http://a', 'GET', '/v1/watch')).toHaveLength(2);
    expect(client.peerStates()[0]).not.toMatchObject({ lastFailure: 'timeout' });
    states.get('http://a')!.streams.at(-1)!.push(snapshot(5, [i2]));
    await flush();
    expect(calls.slice(4)).toEqual(['down i1', 'change [i2]']);
  });
});
