import { afterEach, describe, expect, it } from 'vitest';
import { parseWireRecord } from '../../../src/replication/wire.js';
import type { WatchEvent } from '../../../src/watch/hub.js';
import { record } from '../../support/records.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

const register = (instanceId: string, extra: Record<string, unknown> = {}) =>
  server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080, instanceId, leaseDurationMs: 600_000, ...extra } });
const ids = (list: { instanceId: string }[]) => list.map((item) => item.instanceId);

describe('groups', () => {
  it('are set on register, shown in the view (DEFAULT_GROUP when none) and filter reads', async () => {
    server = await createTestServer();
    expect((await register('a', { group: 'canary' })).json().group).toBe('canary');
    expect((await register('b')).json().group).toBe('DEFAULT_GROUP');
    expect((await register('c', { group: 'DEFAULT_GROUP' })).json().group).toBe('DEFAULT_GROUP');
    expect(server.node.registry.find({ namespace: 'default', service: 'orders', instanceId: 'c' })?.record.data).not.toHaveProperty('group');
    expect(ids((await server.app.inject({ url: '/v1/services/orders?group=canary' })).json().instances)).toEqual(['a']);
    expect(ids((await server.app.inject({ url: '/v1/services/orders?group=DEFAULT_GROUP' })).json().instances)).toEqual(['b', 'c']);
    expect(ids((await server.app.inject({ url: '/v1/services/orders' })).json().instances)).toEqual(['a', 'b', 'c']);
    expect((await server.app.inject({ url: '/v1/services?group=canary' })).json().services).toEqual([{ service: 'orders', instances: 1, up: 1 }]);
    expect((await server.app.inject({ url: '/v1/services?group=nobody' })).json().services).toEqual([]);
  });

  it('moving an instance to another group is a write (a new version)', async () => {
    server = await createTestServer();
    const first = (await register('a')).json().version;
    const moved = await register('a', { group: 'blue' });
    expect(moved.statusCode).toBe(200);
    expect(moved.json().version).not.toBe(first);
  });

  it.each([
    ['POST', '/v1/instances', { service: 'orders', host: '10.0.0.5', port: 1, group: 'bad group' }],
    ['POST', '/v1/instances', { service: 'orders', host: '10.0.0.5', port: 1, group: 7 }],
    ['GET', '/v1/services/orders?group=', undefined],
    ['GET', '/v1/services?group=a%2Fb', undefined],
    ['GET', '/v1/watch?group=x%20y', undefined],
  ] as const)('refuses a bad group: %s %s', async (method, url, payload) => {
    server = await createTestServer();
    const response = await server.app.inject({ method, url, ...(payload ? { payload } : {}) });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toMatch(/^group:/);
  });

  it('travel with the record between peers, and a bad one is refused there too', () => {
    const wire = { ...record({ data: { host: '10.0.0.1', port: 1, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {}, group: 'blue' } }), leaseRemainingMs: 1 };
    expect(parseWireRecord(wire).data.group).toBe('blue');
    expect(parseWireRecord({ ...wire, data: { ...wire.data, group: undefined } }).data).not.toHaveProperty('group');
    expect(() => parseWireRecord({ ...wire, data: { ...wire.data, group: '' } })).toThrow(/record.data.group/);
  });

  it('filter a watch: an instance that leaves the group is removed for its watchers', async () => {
    server = await createTestServer();
    const { node, clock } = server;
    await register('a', { group: 'blue' });
    await register('b');
    const events: WatchEvent[] = [];
    node.watch.subscribe({ namespace: 'default', services: ['orders'], group: 'blue' }, (event) => (events.push(event), true));
    expect(events[0]).toMatchObject({ type: 'snapshot', instances: [expect.objectContaining({ instanceId: 'a', group: 'blue' })] });
    await register('c', { group: 'blue' });
    await register('d');
    await clock.advance(100);
    expect(events[1]).toMatchObject({ type: 'delta', added: [expect.objectContaining({ instanceId: 'c' })], removed: [] });
    await register('a', { group: 'green' });
    await clock.advance(100);
    expect(events[2]).toMatchObject({ type: 'delta', added: [], changed: [], removed: [{ instanceId: 'a' }] });
    expect(events).toHaveLength(3);
  });
});

describe('quotas over HTTP', () => {
  it('answer 409 REG_ERR_QUOTA_EXCEEDED to /v1 and Eureka registrations', async () => {
    server = await createTestServer({ file: { limits: { instancesPerNamespaceMax: 1 } } });
    expect((await register('a')).statusCode).toBe(201);
    const refused = await register('b');
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('REG_ERR_QUOTA_EXCEEDED');
    const eureka = await server.app.inject({
      method: 'POST',
      url: '/eureka/apps/ORDERS',
      headers: { 'content-type': 'application/json' },
      payload: { instance: { app: 'ORDERS', instanceId: 'e-1', hostName: 'h', ipAddr: '10.0.0.9', port: { $: 8080, '@enabled': 'true' }, dataCenterInfo: { '@class': 'x', name: 'MyOwn' } } },
    });
    expect(eureka.statusCode, eureka.body).toBe(409);
    expect(server.node.store.liveCountOfNamespace('default')).toBe(1);
  });
});
