import { afterEach, describe, expect, it } from 'vitest';
import { adapterOfRoute } from '../../../src/metrics/http-attribution.js';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

const requests = (body: string, adapter: string, operation: string, outcome: string) =>
  sampleValue(parsePrometheusText(body), 'registry_adapter_requests_total', { adapter, operation, outcome });

describe('the protocols served on the main port count into their adapter’s metrics', () => {
  it('names each route’s adapter by its prefix; operator, peer and dashboard routes belong to none', () => {
    expect(adapterOfRoute('/v1/instances')).toBe('native');
    expect(adapterOfRoute('/eureka/v2/apps/:app')).toBe('eureka');
    expect(adapterOfRoute('/v1/sd/prometheus')).toBe('prometheus');
    for (const url of ['/v1/peer/:method', '/v1/cluster', '/v1/admin/eviction-guards', '/v1/dashboard/protocols', '/metrics', '/', '/healthz']) {
      expect(adapterOfRoute(url), url).toBeNull();
    }
  });

  it('counts native, Eureka and Prometheus SD requests by route and outcome', async () => {
    server = await createTestServer();
    const { app } = server;
    const register = { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: 'o-1' };
    expect((await app.inject({ method: 'POST', url: '/v1/instances', payload: register })).statusCode).toBe(201);
    expect((await app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders' } })).statusCode).toBe(400);
    expect((await app.inject({ method: 'PUT', url: '/v1/services/orders/instances/nope/heartbeat' })).statusCode).toBe(404);
    expect((await app.inject({ url: '/v1/services/orders' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/eureka/v2/apps', headers: { accept: 'application/json' } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/sd/prometheus' })).statusCode).toBe(200);
    await app.inject({ url: '/v1/cluster' });
    const body = (await app.inject({ url: '/metrics' })).body;
    expect(requests(body, 'native', 'POST /v1/instances', 'ok')).toBe(1);
    expect(requests(body, 'native', 'POST /v1/instances', 'bad_input')).toBe(1);
    expect(requests(body, 'native', 'PUT /v1/services/:service/instances/:id/heartbeat', 'bad_input')).toBe(1);
    expect(requests(body, 'native', 'GET /v1/services/:service', 'ok')).toBe(1);
    expect(requests(body, 'eureka', 'GET /eureka/v2/apps', 'ok')).toBe(1);
    expect(requests(body, 'prometheus', 'GET /v1/sd/prometheus', 'ok')).toBe(1);
    // The cluster view is the operator's, not a protocol's.
    const operations = parsePrometheusText(body).get('registry_adapter_requests_total')!.samples.map((s) => s.labels.operation);
    expect(operations.some((operation) => operation?.includes('/v1/cluster'))).toBe(false);
  });

  it('counts a long poll under its own operation', async () => {
    server = await createTestServer();
    const { app, clock } = server;
    let answered = false;
    const poll = app.inject({ url: '/v1/services/orders?index=0&wait=1s' }).finally(() => (answered = true));
    await clock.advanceUntil(() => answered, 5_000, 100);
    expect((await poll).statusCode).toBe(200);
    const body = (await app.inject({ url: '/metrics' })).body;
    expect(requests(body, 'native', 'GET /v1/services/:service (long poll)', 'ok')).toBe(1);
    expect(requests(body, 'native', 'GET /v1/services/:service', 'ok')).toBeUndefined();
  });
});
