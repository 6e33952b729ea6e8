import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { buildServer } from '../../../src/http/server.js';
import { createTestNode } from '../../support/node.js';
import { parsePrometheusText, sampleValue, type Family } from '../../support/prom-text.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

const docs = readFileSync(new URL('../../../docs/metrics.md', import.meta.url), 'utf8');

async function scrape(s: TestServer): Promise<Map<string, Family>> {
  const response = await s.app.inject({ url: '/metrics' });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toContain('text/plain');
  return parsePrometheusText(response.body);
}

const value = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}) => sampleValue(families, name, labels);

function register(s: TestServer, instanceId: string, extra: Record<string, unknown> = {}) {
  return s.app.inject({
    method: 'POST',
    url: '/v1/instances',
    payload: { service: 'orders', host: '10.0.0.5', port: 8080, instanceId, ...extra },
  });
}

describe('GET /metrics', () => {
  it('documents every series it exports, with its type, and exports every documented registry_ series', async () => {
    const { node } = await createTestNode();
    const app = await buildServer({ node, processMetrics: true });
    await app.ready();
    try {
      const families = parsePrometheusText((await app.inject({ url: '/metrics' })).body);
      expect(families.size).toBeGreaterThan(40);
      for (const family of families.values()) {
        const documented = family.name.startsWith('registry_')
          ? docs.includes(`| \`${family.name}\` | ${family.type} |`)
          : docs.includes(`\`${family.name}\``);
        expect(documented, `${family.name} (${family.type}) missing from docs/metrics.md`).toBe(true);
        expect(family.help.length, `${family.name} has no help`).toBeGreaterThan(10);
      }
      const listed = [...docs.matchAll(/^\| `(registry_[a-z_]+)` \| (\w+) \|/gm)].map((match) => match[1]!);
      expect(listed.length).toBeGreaterThan(35);
      for (const name of listed) expect(families.has(name), `${name} is documented but not exported`).toBe(true);
    } finally {
      await app.close();
    }
  });

  it('counts registrations, heartbeats by outcome, status changes and cancels as they happen', async () => {
    server = await createTestServer();
    let m = await scrape(server);
    expect(value(m, 'registry_registrations_total', { namespace: 'default' })).toBe(0);
    expect(value(m, 'registry_instances', { namespace: 'default', status: 'UP' })).toBeUndefined();

    expect((await register(server, 'a')).statusCode).toBe(201);
    expect((await register(server, 'b')).statusCode).toBe(201);
    expect((await register(server, 'a')).statusCode).toBe(200); // a renewal, not a new registration
    await server.app.inject({ method: 'POST', url: '/v1/instances?namespace=team-a', payload: { service: 'billing', host: '10.0.0.6', port: 1 } });
    m = await scrape(server);
    expect(value(m, 'registry_registrations_total', { namespace: 'default' })).toBe(2);
    expect(value(m, 'registry_registrations_total', { namespace: 'team-a' })).toBe(1);
    expect(value(m, 'registry_instances', { namespace: 'default', status: 'UP' })).toBe(2);
    expect(value(m, 'registry_services', { namespace: 'default' })).toBe(1);
    expect(value(m, 'registry_services', { namespace: 'team-a' })).toBe(1);
    expect(value(m, 'registry_records', { kind: 'instance' })).toBe(3);

    for (let i = 0; i < 3; i += 1) {
      await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/a/heartbeat' });
    }
    await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/nobody/heartbeat' });
    await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/b/status', payload: { status: 'OUT_OF_SERVICE' } });
    m = await scrape(server);
    expect(value(m, 'registry_heartbeats_total', { outcome: 'renewed' })).toBe(3);
    expect(value(m, 'registry_heartbeats_total', { outcome: 'unknown' })).toBe(1);
    expect(value(m, 'registry_heartbeats_total', { outcome: 'takeover' })).toBe(0);
    expect(value(m, 'registry_instances', { namespace: 'default', status: 'UP' })).toBe(1);
    expect(value(m, 'registry_instances', { namespace: 'default', status: 'OUT_OF_SERVICE' })).toBe(1);

    await server.app.inject({ method: 'DELETE', url: '/v1/services/orders/instances/b' });
    m = await scrape(server);
    expect(value(m, 'registry_cancels_total', { namespace: 'default' })).toBe(1);
    expect(value(m, 'registry_records', { kind: 'tombstone' })).toBe(1);
    expect(value(m, 'registry_instances', { namespace: 'default', status: 'OUT_OF_SERVICE' })).toBe(0);
    expect(value(m, 'registry_revision')).toBe(server.node.store.revision);
    expect(value(m, 'registry_ready')).toBe(1);
  });

  it('counts evictions when a lease runs out', async () => {
    server = await createTestServer();
    await register(server, 'short', { leaseDurationMs: 1_000 });
    await register(server, 'long', { leaseDurationMs: 600_000 });
    expect(value(await scrape(server), 'registry_evictions_total', { namespace: 'default', reason: 'expired' })).toBe(0);
    await server.clock.advance(3_000);
    const m = await scrape(server);
    expect(value(m, 'registry_evictions_total', { namespace: 'default', reason: 'expired' })).toBe(1);
    expect(value(m, 'registry_instances', { namespace: 'default', status: 'UP' })).toBe(1);
  });

  it('shows self-preservation turning on, with its figures, and what it holds', async () => {
    server = await createTestServer({
      file: { cluster: { selfPreservationMinInstances: 2, selfPreservationWarmUpMs: 0, renewalWindowMs: 10_000, heartbeatIntervalMs: 1_000, leaseDurationMs: 5_000 } },
    });
    for (const id of ['a', 'b', 'c', 'd']) await register(server, id);
    // Each heartbeats once (only instances that were renewing are expected to go on), then stops.
    await server.clock.advance(500);
    for (const id of ['a', 'b', 'c', 'd']) await server.app.inject({ method: 'PUT', url: `/v1/services/orders/instances/${id}/heartbeat` });
    let m = await scrape(server);
    expect(value(m, 'registry_self_preservation_active')).toBe(0);
    expect(value(m, 'registry_self_preservation_threshold_ratio')).toBe(0.85);
    // Nobody heartbeats any more: after a few seconds far fewer renewals arrived than expected.
    await server.clock.advance(7_000);
    m = await scrape(server);
    expect(value(m, 'registry_self_preservation_active')).toBe(1);
    expect(value(m, 'registry_self_preservation_owned_instances')).toBe(4);
    expect(value(m, 'registry_self_preservation_expected_renewals')).toBeGreaterThan(value(m, 'registry_self_preservation_renewals')!);
    expect(value(m, 'registry_eviction_held', { guard: 'selfPreservation' })).toBe(4);
    expect(value(m, 'registry_eviction_held_total', { guard: 'selfPreservation' })).toBeGreaterThan(0);
    expect(value(m, 'registry_evictions_total', { namespace: 'default', reason: 'expired' })).toBe(0);
    expect(value(m, 'registry_partition_guard_active')).toBe(0);
  });

  it('counts watchers and the events sent to them', async () => {
    server = await createTestServer();
    const events: unknown[] = [];
    const subscription = server.node.watch.subscribe({ namespace: 'default', services: null }, (event) => (events.push(event), true));
    let m = await scrape(server);
    expect(value(m, 'registry_watchers', { kind: 'stream' })).toBe(1);
    expect(value(m, 'registry_watchers', { kind: 'long_poll' })).toBe(0);
    const before = value(m, 'registry_watch_events_total')!;
    await register(server, 'a');
    await server.clock.advance(100);
    m = await scrape(server);
    expect(value(m, 'registry_watch_events_total')).toBeGreaterThan(before);
    subscription.close();
    m = await scrape(server);
    expect(value(m, 'registry_watchers', { kind: 'stream' })).toBe(0);
  });

  it('times requests by route pattern, never by raw URL', async () => {
    server = await createTestServer();
    await register(server, 'a');
    await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/a/heartbeat' });
    await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/a/heartbeat' });
    await server.app.inject({ url: '/no/such/route' });
    const m = await scrape(server);
    const route = '/v1/services/:service/instances/:id/heartbeat';
    expect(value(m, 'registry_http_request_duration_seconds_count', { method: 'PUT', route, status_code: '200' })).toBe(2);
    expect(value(m, 'registry_http_request_duration_seconds_bucket', { method: 'PUT', route, status_code: '200', le: '+Inf' })).toBe(2);
    expect(value(m, 'registry_http_request_duration_seconds_count', { method: 'POST', route: '/v1/instances', status_code: '201' })).toBe(1);
    expect(value(m, 'registry_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status_code: '404' })).toBe(1);
    const routes = new Set(m.get('registry_http_request_duration_seconds')!.samples.map((sample) => sample.labels.route));
    expect([...routes].some((r) => r?.includes('orders'))).toBe(false);
  });
});
