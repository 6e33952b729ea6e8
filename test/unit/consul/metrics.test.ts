import { afterEach, describe, expect, it } from 'vitest';
import type { Outcome } from '../../../src/metrics/adapter-metrics.js';
import { NodeMetrics } from '../../../src/metrics/node-metrics.js';
import { protocolsView } from '../../../src/metrics/protocols-view.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';
import { settle } from '../../support/fake-clock.js';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.js';

let t: TestConsul;
afterEach(async () => t?.close());

const READER = 'reader-token-0123456789';
const file = { security: { tokens: [{ name: 'reader', token: READER, namespaces: ['default'], scopes: ['read'] }] } };
const register = (id: string) =>
  t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'web', ID: id, Address: '10.0.0.1', Port: 8080, Check: { TTL: '30s', Status: 'passing' } } });
const consul = () => t.node.adapterMetrics.adapter('consul');
const count = (operation: string, outcome: Outcome) => consul().operations.get(operation)?.count(outcome) ?? 0;

async function scrape() {
  return parsePrometheusText(await new NodeMetrics(t.node).scrape());
}

describe('the Consul adapter in the metrics port', () => {
  it('counts each route by operation and outcome, answers written directly to the socket included', async () => {
    t = await createTestConsul();
    expect((await register('web-1')).statusCode).toBe(200);
    // health/service answers past fastify's reply hooks (query.ts, sendConsulAnswer): it records itself.
    expect((await t.app.inject({ url: '/v1/health/service/web' })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/v1/health/service/web?index=x' })).statusCode).toBe(400);
    expect(count('PUT /v1/agent/service/register', 'ok')).toBe(1);
    expect(count('GET /v1/health/service/:name', 'ok')).toBe(1);
    expect(count('GET /v1/health/service/:name', 'bad_input')).toBe(1);
    const families = await scrape();
    expect(sampleValue(families, 'registry_adapter_requests_total', { adapter: 'consul', operation: 'GET /v1/health/service/:name', outcome: 'ok' })).toBe(1);
    expect(sampleValue(families, 'registry_adapter_request_duration_seconds_count', { adapter: 'consul', operation: 'PUT /v1/agent/service/register', outcome: 'ok' })).toBe(1);
  });

  it('counts a missing or unknown token as unauthenticated, a token without the scope as forbidden', async () => {
    t = await createTestConsul({ file });
    // Consul answers a missing or unknown token 403 (its clients know no 401): counted unauthenticated.
    expect((await t.app.inject({ url: '/v1/catalog/services', headers: { 'x-consul-token': 'nobody-knows-this-token' } })).statusCode).toBe(403);
    expect((await register('web-1')).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', headers: { 'x-consul-token': READER }, payload: { Name: 'web', ID: 'w', Address: '10.0.0.1', Port: 1 } })).statusCode).toBe(403);
    expect(count('GET /v1/catalog/services', 'unauthenticated')).toBe(1);
    expect(count('PUT /v1/agent/service/register', 'unauthenticated')).toBe(1);
    expect(count('PUT /v1/agent/service/register', 'forbidden')).toBe(1);
  });

  it('shows blocking queries as the held pool, a refusal at the cap, and a wake by a change as a push', async () => {
    t = await createTestConsul({ file: { consul: { blockingQueriesMax: 1 } } });
    await register('web-1');
    const index = (await t.app.inject({ url: '/v1/health/service/web' })).headers['x-consul-index'];
    const held = t.app.inject({ url: `/v1/health/service/web?index=${index}&wait=1m` });
    await settle();
    let families = await scrape();
    expect(sampleValue(families, 'registry_adapter_held', { adapter: 'consul', pool: 'blocking_queries' })).toBe(1);
    expect(sampleValue(families, 'registry_adapter_held_by_principal', { adapter: 'consul', pool: 'blocking_queries', principal: 'address:127.0.0.1' })).toBe(1);
    expect(sampleValue(families, 'registry_adapter_pushes_total', { adapter: 'consul' })).toBe(0);
    // The dashboard's Protocols panel reads the same recorders.
    expect(protocolsView(t.node).protocols.find((load) => load.protocol === 'consul')).toMatchObject({ held: 1, requests: 2 });
    const refused = await t.app.inject({ url: `/v1/health/service/web?index=${index}&wait=1m` });
    expect(refused.statusCode).toBe(429);
    await register('web-2');
    expect((await held).statusCode).toBe(200);
    families = await scrape();
    expect(sampleValue(families, 'registry_adapter_held', { adapter: 'consul', pool: 'blocking_queries' })).toBe(0);
    expect(sampleValue(families, 'registry_adapter_held_refused_total', { adapter: 'consul', pool: 'blocking_queries', cap: 'peer' })).toBe(1);
    expect(sampleValue(families, 'registry_adapter_requests_total', { adapter: 'consul', operation: 'GET /v1/health/service/:name', outcome: 'limited' })).toBe(1);
    expect(sampleValue(families, 'registry_adapter_pushes_total', { adapter: 'consul' })).toBe(1);
    expect(sampleValue(families, 'registry_adapter_push_delay_seconds_count', { adapter: 'consul' })).toBe(1);
  });
});
