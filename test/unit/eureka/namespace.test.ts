import { afterEach, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

const json = { accept: 'application/json' };
const eurekaRegister = (id: string) =>
  server.app.inject({
    method: 'POST',
    url: '/eureka/v2/apps/ORDERS',
    headers: { 'content-type': 'application/json' },
    payload: { instance: { app: 'ORDERS', instanceId: id, hostName: 'h1', ipAddr: '10.0.0.9', port: { $: 8080, '@enabled': 'true' }, dataCenterInfo: { '@class': 'x', name: 'MyOwn' } } },
  });

describe('the Eureka namespace (security.eurekaNamespace)', () => {
  it('holds what Eureka clients register and is all the Eureka API lists', async () => {
    server = await createTestServer({ file: { security: { eurekaNamespace: 'legacy' } } });
    // A client's first fetch: the delta window records from then on.
    await server.app.inject({ url: '/eureka/v2/apps', headers: json });
    expect((await eurekaRegister('e-1')).statusCode).toBe(204);
    expect(server.node.registry.find({ namespace: 'legacy', service: 'ORDERS', instanceId: 'e-1' })).toBeDefined();
    await server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 1, instanceId: 'in-default' } });
    await server.app.inject({ method: 'POST', url: '/v1/instances?namespace=legacy', payload: { service: 'orders', host: '10.0.0.5', port: 1, instanceId: 'in-legacy' } });
    const app = (await server.app.inject({ url: '/eureka/v2/apps/ORDERS', headers: json })).json().application;
    expect(app.instance.map((i: { instanceId: string }) => i.instanceId).sort()).toEqual(['e-1', 'in-legacy']);
    expect((await server.app.inject({ url: '/eureka/v2/instances/in-default', headers: json })).statusCode).toBe(404);
    expect((await server.app.inject({ method: 'PUT', url: '/eureka/v2/apps/ORDERS/in-legacy' })).statusCode).toBe(200);
    expect((await server.app.inject({ url: '/v1/services/orders' })).json().instances).toHaveLength(1);
    const delta = (await server.app.inject({ url: '/eureka/v2/apps/delta', headers: json })).json().applications.application;
    expect(delta.flatMap((a: { instance: { instanceId: string }[] }) => a.instance.map((i) => i.instanceId)).sort()).toEqual(['e-1', 'in-legacy']);
  });
});
