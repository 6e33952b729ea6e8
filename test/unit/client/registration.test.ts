import { afterEach, describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { createRegistryClient, type RegistryClient } from '../../../src/client/client.js';
import { RegistryClientError } from '../../../src/client/errors.js';
import type { InstanceRegistration } from '../../../src/client/types.js';
import { FakeClock } from '../../support/fake-clock.js';
import { fakeInstance, fakePeerState, fakeRegistryPeer, FakeHttp, type FakePeerState } from '../../support/fake-http.js';
import { settled } from '../../support/settle.js';

const peers = ['http://a', 'http://b', 'http://c'];
const orders = { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: 'orders-1', zone: 'z1' };
let client: RegistryClient | undefined;

afterEach(async () => {
  await client?.close();
  client = undefined;
});

function build(intervalMs = 2_000) {
  const clock = new FakeClock(0);
  const http = new FakeHttp(() => clock.nowMs());
  const states = new Map<string, FakePeerState>(peers.map((peer) => [peer, fakePeerState(intervalMs)]));
  for (const peer of peers) http.peer(peer, fakeRegistryPeer(peer, states.get(peer)!));
  client = createRegistryClient({ peers, clock, rng: seededRng(5), http, requestTimeoutMs: 500, closeTimeoutMs: 1_000 });
  return { clock, http, states, client };
}

describe('registration loop', () => {
  it('registers on the first peer, then heartbeats it at the interval the peer answered', async () => {
    const { clock, http, client } = build(2_000);
    const registration = await settled(clock, client.register(orders));
    expect(registration.instanceId).toBe('orders-1');
    expect(registration.heartbeatIntervalMs).toBe(2_000);
    expect(http.seen('http://a', 'POST', '/v1/instances')[0]!.body).toEqual({ ...orders, status: 'UP', namespace: 'default' });
    await clock.advance(10_000);
    const beats = http.seen(null, 'PUT', '/v1/services/orders/instances/orders-1/heartbeat');
    expect(beats.map((r) => `${r.peer}@${r.atMs}`)).toEqual(['http://a@2000', 'http://a@4000', 'http://a@6000', 'http://a@8000', 'http://a@10000']);
    expect(registration.heartbeats).toBe(5);
  });

  it('registers an instance in a group (type-checked: group is part of the registration)', async () => {
    const { clock, http, client } = build(2_000);
    const canary: InstanceRegistration = { ...orders, group: 'canary' };
    const registration = await settled(clock, client.register(canary));
    expect(http.seen('http://a', 'POST', '/v1/instances')[0]!.body).toEqual({ ...orders, group: 'canary', status: 'UP', namespace: 'default' });
    // The answer's instance carries it (the fake peer answers what it stored, as a peer does).
    const group: string | undefined = registration.instance.group;
    expect(group).toBe('canary');
  });

  it('follows a new interval when a heartbeat answer says so', async () => {
    const { clock, http, client, states } = build(2_000);
    await settled(clock, client.register(orders));
    await clock.advance(2_000);
    states.get('http://a')!.intervalMs = 500;
    await clock.advance(2_000 + 1_500);
    const times = http.seen(null, 'PUT', '/v1/services/orders/instances/orders-1/heartbeat').map((r) => r.atMs);
    expect(times).toEqual([2_000, 4_000, 4_500, 5_000, 5_500]);
  });

  it('registers again, with the same id and status, when a heartbeat answers 404', async () => {
    const { clock, http, client, states } = build(1_000);
    const registration = await settled(clock, client.register({ ...orders, instanceId: undefined }));
    expect(registration.instanceId).toBe('10.0.0.5:8080');
    await settled(clock, registration.setStatus('OUT_OF_SERVICE'));
    states.get('http://a')!.instances.clear(); // evicted
    await clock.advance(1_000);
    const posts = http.seen('http://a', 'POST', '/v1/instances');
    expect(posts).toHaveLength(2);
    expect(posts[1]!.body).toMatchObject({ instanceId: '10.0.0.5:8080', status: 'OUT_OF_SERVICE', service: 'orders' });
    expect(registration.reRegistrations).toBe(1);
    expect(states.get('http://a')!.instances.get('10.0.0.5:8080')?.status).toBe('OUT_OF_SERVICE');
    await clock.advance(1_000);
    expect(http.seen('http://a', 'PUT', '/v1/services/orders/instances/10.0.0.5%3A8080/heartbeat').at(-1)!.atMs).toBe(2_000);
  });

  it('moves its heartbeats to the next peer when its peer dies, and stays there', async () => {
    const { clock, http, client, states } = build(1_000);
    await settled(clock, client.register(orders));
    http.down('http://a');
    // The next peer never heard of the instance in this fake: 404, so it registers there.
    await clock.advance(1_000);
    expect(http.seen('http://b', 'PUT', '/v1/services/orders/instances/orders-1/heartbeat')).toHaveLength(1);
    expect(states.get('http://b')!.instances.has('orders-1')).toBe(true);
    http.peer('http://a', fakeRegistryPeer('http://a', states.get('http://a')!));
    await clock.advance(5_000);
    const beats = http.seen(null, 'PUT', '/v1/services/orders/instances/orders-1/heartbeat').filter((r) => r.atMs > 1_000);
    expect(new Set(beats.map((r) => r.peer))).toEqual(new Set(['http://b']));
    expect(client.currentPeer).toBe('http://b');
  });

  it('keeps trying when every peer is down, without piling heartbeats up, and comes back by itself', async () => {
    const { clock, http, client, states } = build(1_000);
    const registration = await settled(clock, client.register(orders));
    for (const peer of peers) http.down(peer);
    await clock.advance(10_000);
    const during = http.requests.filter((r) => r.atMs > 0).length;
    // Bounded: a few attempts per interval, never a storm.
    expect(during).toBeGreaterThan(5);
    expect(during).toBeLessThan(100);
    for (const peer of peers) http.peer(peer, fakeRegistryPeer(peer, states.get(peer)!));
    await clock.advance(3_000);
    expect(registration.heartbeats).toBeGreaterThan(0);
    const anyPeerKnows = peers.some((peer) => states.get(peer)!.instances.has('orders-1'));
    expect(anyPeerKnows).toBe(true);
  });

  it('close() cancels the instance, stops every timer, and sends nothing more', async () => {
    const { clock, http, client, states } = build(1_000);
    const registration = await settled(clock, client.register(orders));
    await clock.advance(2_500);
    await settled(clock, registration.close());
    expect(http.seen('http://a', 'DELETE', '/v1/services/orders/instances/orders-1')).toHaveLength(1);
    expect(states.get('http://a')!.instances.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    const count = http.requests.length;
    await clock.advance(10_000);
    expect(http.requests.length).toBe(count);
    // A second close is the same close.
    await registration.close();
    expect(http.seen(null, 'DELETE', '/')).toHaveLength(1);
    await expect(registration.setStatus('UP')).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_CLOSED' });
  });

  it('client.close() cancels every registration, gives up on unreachable peers within closeTimeoutMs, and stops all timers', async () => {
    const { clock, http, client } = build(1_000);
    await settled(clock, client.register(orders));
    await settled(clock, client.register({ ...orders, instanceId: 'orders-2' }));
    await settled(clock, client.close());
    expect(http.seen(null, 'DELETE', '/').map((r) => r.path)).toEqual([
      '/v1/services/orders/instances/orders-1?namespace=default',
      '/v1/services/orders/instances/orders-2?namespace=default',
    ]);
    expect(clock.pendingTimers).toBe(0);
    expect(http.closed).toBe(false); // the caller's layer: the caller closes it
    await expect(client.register(orders)).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_CLOSED' });

    const other = build(1_000);
    await settled(other.clock, other.client.register(orders));
    for (const peer of peers) other.http.down(peer);
    const startMs = other.clock.nowMs();
    await settled(other.clock, other.client.close());
    expect(other.clock.nowMs() - startMs).toBeLessThanOrEqual(1_000);
    expect(other.clock.pendingTimers).toBe(0);
  });

  it('closed while its first register is in flight, still cancels the id it asked for', async () => {
    const { clock, http, client, states } = build(1_000);
    // The register lands on the peer, but its answer never comes back.
    const handler = fakeRegistryPeer('http://a', states.get('http://a')!);
    http.peer('http://a', (request) => (request.method === 'POST' ? (handler(request), 'hang') : handler(request)));
    const registering = client.register({ ...orders, instanceId: undefined }).catch((e: unknown) => e);
    await clock.advance(100);
    expect(states.get('http://a')!.instances.has('10.0.0.5:8080')).toBe(true);
    await settled(clock, client.close());
    expect(await registering).toMatchObject({ code: 'REG_CLIENT_ERR_CLOSED' });
    expect(http.seen('http://a', 'DELETE', '/v1/services/orders/instances/10.0.0.5%3A8080')).toHaveLength(1);
    expect(states.get('http://a')!.instances.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('passes a peer refusal of the instance through, and leaves no timer behind', async () => {
    const { clock, http, client } = build();
    http.peer('http://a', () => ({ status: 400, body: { code: 'REG_ERR_VALIDATION', message: 'port: must be between 1 and 65535' } }));
    const error = await settled(clock, client.register({ ...orders, port: 0 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryClientError);
    expect(error).toMatchObject({ code: 'REG_ERR_VALIDATION', status: 400, peer: 'http://a' });
    expect((error as Error).message).toContain('port: must be between 1 and 65535');
    expect(clock.pendingTimers).toBe(0);
  });

  it('refuses a bad service name or instance id before sending anything', async () => {
    const { http, client } = build();
    await expect(client.register({ ...orders, service: 'bad name' })).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_INVALID_ARGUMENT' });
    await expect(client.register({ ...orders, instanceId: '' })).rejects.toMatchObject({ code: 'REG_CLIENT_ERR_INVALID_ARGUMENT' });
    expect(http.requests).toHaveLength(0);
  });

  it('rejects a register answer that is not an instance, or has no heartbeatIntervalMs, as a bad response', async () => {
    for (const [body, message] of [
      [{ instanceId: 'x' }, /instance\.service/],
      [fakeInstance('orders-1'), /heartbeatIntervalMs/],
    ] as const) {
      const { clock, http, client } = build();
      http.peer('http://a', () => ({ status: 201, body }));
      const error = await settled(clock, client.register(orders)).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'REG_CLIENT_ERR_BAD_RESPONSE' });
      expect((error as Error).message).toMatch(message);
    }
  });
});
