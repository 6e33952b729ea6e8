import { afterEach, describe, expect, it } from 'vitest';
import { registeredThrough, REGISTERED_THROUGH } from '../../../src/metrics/protocols-view.js';
import type { InstanceData } from '../../../src/registry/types.js';
import { jsClientBody } from '../eureka/fixtures.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

const data = (extra: Partial<InstanceData> = {}): InstanceData => ({
  host: '10.0.0.1', port: 80, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {}, ...extra,
});

describe('which protocol registered an instance', () => {
  it('reads it from the record’s protocol data, first match of the table, native otherwise', () => {
    expect(registeredThrough(data())).toBe('native');
    expect(registeredThrough(data({ metadata: { version: '1' } }))).toBe('native');
    expect(registeredThrough(data({ extensions: { eureka: { vipAddress: 'x' } } }))).toBe('eureka');
    expect(registeredThrough(data({ metadata: { 'consul.tags': '["v1"]' } }))).toBe('consul');
    expect(registeredThrough(data({ extensions: { consul: {} } }))).toBe('consul');
    expect(registeredThrough(data({ extensions: { nacos: { cluster: 'DEFAULT' } } }))).toBe('nacos');
    // A record extension is matched before Consul's metadata keys (records written before its extension).
    expect(registeredThrough(data({ extensions: { nacos: { cluster: 'DEFAULT' } }, metadata: { 'consul.tags': 'x' } }))).toBe('nacos');
    expect(REGISTERED_THROUGH.map(([protocol]) => protocol)).toEqual(['consul', 'nacos', 'eureka', 'consul']);
  });
});

describe('GET /v1/dashboard/registrations and /v1/dashboard/protocols', () => {
  it('counts each service’s instances by the protocol that registered them, and lists one service’s instances', async () => {
    server = await createTestServer();
    const { app } = server;
    const native = { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: 'n-1' };
    expect((await app.inject({ method: 'POST', url: '/v1/instances', payload: native })).statusCode).toBe(201);
    const viaConsulTags = { ...native, instanceId: 'c-1', metadata: { 'consul.tags': '["v1"]' } };
    expect((await app.inject({ method: 'POST', url: '/v1/instances', payload: viaConsulTags })).statusCode).toBe(201);
    expect((await app.inject({ method: 'POST', url: '/eureka/v2/apps/ORDERS', payload: jsClientBody({ app: 'ORDERS' }) })).statusCode).toBe(204);
    expect((await app.inject({ method: 'POST', url: '/v1/instances', payload: { ...native, service: 'billing', instanceId: 'b-1' } })).statusCode).toBe(201);

    const all = await app.inject({ url: '/v1/dashboard/registrations?namespace=default' });
    expect(all.statusCode).toBe(200);
    const byService = Object.fromEntries((all.json().services as Array<{ service: string; protocols: Record<string, number> }>).map((s) => [s.service.toLowerCase(), s.protocols]));
    expect(byService).toEqual({ orders: { native: 1, consul: 1, eureka: 1 }, billing: { native: 1 } });
    expect(all.json().instances).toBeUndefined();

    const one = await app.inject({ url: '/v1/dashboard/registrations?service=orders' });
    const instances = one.json().instances as Array<{ instanceId: string; protocol: string }>;
    expect(Object.fromEntries(instances.map((i) => [i.instanceId, i.protocol]))).toEqual({ 'n-1': 'native', 'c-1': 'consul', 'orders-1.local': 'eureka' });

    const bad = await app.inject({ url: '/v1/dashboard/registrations?namespace=Bad%20Name' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('REG_ERR_VALIDATION');
  });

  it('lists the listeners and each protocol’s requests, refusals and clients held', async () => {
    server = await createTestServer({ file: { dns: { port: 8600 } } });
    const { app } = server;
    await app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080 } });
    await app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders' } });
    await app.inject({ url: '/eureka/v2/apps', headers: { accept: 'application/json' } });
    const answer = await app.inject({ url: '/v1/dashboard/protocols' });
    expect(answer.statusCode).toBe(200);
    const body = answer.json() as { listeners: Array<Record<string, unknown>>; protocols: Array<Record<string, unknown>> };
    const listener = (protocol: string) => body.listeners.find((l) => l.protocol === protocol);
    expect(listener('native')).toMatchObject({ on: true, transport: 'HTTP' });
    expect(listener('dns')).toMatchObject({ on: true, address: '127.0.0.1:8600', transport: 'UDP and TCP' });
    expect(listener('xds')).toMatchObject({ on: false, address: null });
    expect(listener('consul')).toMatchObject({ on: false });
    const load = (protocol: string) => body.protocols.find((p) => p.protocol === protocol);
    expect(load('native')).toMatchObject({ requests: 2, refused: 0, refusedAtCap: 0, held: 0, byOutcome: { ok: 1, bad_input: 1 } });
    expect(load('eureka')).toMatchObject({ requests: 1 });
    expect(load('dns')).toMatchObject({ requests: 0, held: 0 });
  });
});
