import { afterEach, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

const register = (id: string, status = 'UP', service = 'orders') =>
  server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service, host: '10.0.0.5', port: 8080, instanceId: id, status } });

describe('read-side protect threshold', () => {
  it('is off by default: only UP instances are listed', async () => {
    server = await createTestServer();
    await register('a');
    for (const id of ['b', 'c', 'd']) await register(id, 'DOWN');
    const body = (await server.app.inject({ url: '/v1/services/orders' })).json();
    expect(body.protected).toBe(false);
    expect(body.instances.map((i: { instanceId: string }) => i.instanceId)).toEqual(['a']);
  });

  it('lists every served instance, flagged, when the healthy share falls below the service threshold', async () => {
    server = await createTestServer({ file: { services: { orders: { protectThresholdRatio: 0.5 } } } });
    await register('a');
    await register('b');
    await register('c', 'DOWN');
    let body = (await server.app.inject({ url: '/v1/services/orders' })).json();
    expect(body.protected).toBe(false);
    expect(body.instances).toHaveLength(2);
    await register('d', 'DOWN');
    await register('e', 'OUT_OF_SERVICE');
    body = (await server.app.inject({ url: '/v1/services/orders' })).json();
    expect(body.protected).toBe(true);
    expect(body.instances.map((i: { instanceId: string }) => i.instanceId)).toEqual(['a', 'b', 'c', 'd', 'e']);
    // Another service, without a threshold, is not protected.
    await register('x', 'DOWN', 'billing');
    expect((await server.app.inject({ url: '/v1/services/billing' })).json()).toMatchObject({ protected: false, instances: [] });
  });

  it('takes the cluster default, and a namespaced service key', async () => {
    server = await createTestServer({ file: { cluster: { protectThresholdRatio: 0.9 }, services: { 'team-a/orders': { protectThresholdRatio: 0 } } } });
    await register('a');
    await register('b', 'DOWN');
    expect((await server.app.inject({ url: '/v1/services/orders' })).json().protected).toBe(true);
    await server.app.inject({ method: 'POST', url: '/v1/instances?namespace=team-a', payload: { service: 'orders', host: '10.0.0.5', port: 1, status: 'DOWN' } });
    expect((await server.app.inject({ url: '/v1/services/orders?namespace=team-a' })).json().protected).toBe(false);
  });
});

describe('/v1/admin/eviction-guards', () => {
  it('shows the guards, and lets an operator switch them off and back to auto', async () => {
    server = await createTestServer();
    const shown = (await server.app.inject({ url: '/v1/admin/eviction-guards' })).json();
    expect(shown.selfPreservation).toMatchObject({ active: false, mode: 'auto', thresholdRatio: 0.85 });
    expect(shown.partitionGuard).toMatchObject({ active: false, mode: 'auto', ratio: 0.15 });
    const off = await server.app.inject({ method: 'PUT', url: '/v1/admin/eviction-guards', payload: { selfPreservation: 'off', partitionGuard: 'off' } });
    expect(off.statusCode).toBe(200);
    expect(off.json().selfPreservation).toMatchObject({ mode: 'off', reason: 'switched off by an operator' });
    expect(off.json().partitionGuard.mode).toBe('off');
    const auto = await server.app.inject({ method: 'PUT', url: '/v1/admin/eviction-guards', payload: { selfPreservation: 'auto' } });
    expect(auto.json().selfPreservation.mode).toBe('auto');
    expect(auto.json().partitionGuard.mode).toBe('off');
  });

  it.each([[{}], [{ selfPreservation: 'never' }], [{ other: 'off' }], [[]]])('refuses %j with 400', async (payload) => {
    server = await createTestServer();
    const response = await server.app.inject({ method: 'PUT', url: '/v1/admin/eviction-guards', payload: payload as object });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('REG_ERR_VALIDATION');
  });

  it('is part of /v1/cluster', async () => {
    server = await createTestServer();
    const body = (await server.app.inject({ url: '/v1/cluster' })).json();
    expect(body.evictionSafety.selfPreservation).toHaveProperty('renewalsInWindow');
    expect(body.evictionSafety.held).toEqual({ selfPreservation: 0, partitionGuard: 0, serviceCap: 0, runCap: 0 });
  });
});
