import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AdapterMetrics, adapterMetricsLimits, MetricsDeclarationError, outcomeOfStatus } from '../../../src/metrics/adapter-metrics.js';
import { registerAdapterSeries } from '../../../src/metrics/adapter-series.js';
import { HeldShares } from '../../../src/security/held-shares.js';
import { parsePrometheusText, sampleValue, type Family } from '../../support/prom-text.js';

/** Adapter metrics on two hand-driven clocks: monotonic ms (latencies) and the peer's clock (change times). */
function setUp() {
  const time = { monotonicMs: 1_000, nowMs: 1_700_000_000_000 };
  const metrics = new AdapterMetrics({ monotonicMs: () => time.monotonicMs, nowMs: () => time.nowMs });
  const registry = new Registry();
  registerAdapterSeries(registry, metrics);
  const scrape = async (): Promise<Map<string, Family>> => parsePrometheusText(await registry.metrics());
  return { time, metrics, scrape };
}

describe('the adapters’ metrics port', () => {
  it('moves the request counter and the latency histogram of the operation and outcome recorded', async () => {
    const { time, metrics, scrape } = setUp();
    const consul = metrics.adapter('consul', ['catalog.service', 'health.service']);
    const catalog = consul.operation('catalog.service');
    const started = catalog.start();
    time.monotonicMs += 3; // 3 ms
    catalog.done('ok', started);
    catalog.observe('limited', 0.0001);
    consul.operation('health.service').observe('forbidden', 40);
    const m = await scrape();
    const labels = { adapter: 'consul', operation: 'catalog.service' };
    expect(sampleValue(m, 'registry_adapter_requests_total', { ...labels, outcome: 'ok' })).toBe(1);
    expect(sampleValue(m, 'registry_adapter_requests_total', { ...labels, outcome: 'limited' })).toBe(1);
    expect(sampleValue(m, 'registry_adapter_requests_total', { adapter: 'consul', operation: 'health.service', outcome: 'forbidden' })).toBe(1);
    // Outcomes that never happened are not listed.
    expect(sampleValue(m, 'registry_adapter_requests_total', { ...labels, outcome: 'error' })).toBeUndefined();
    const ok = { ...labels, outcome: 'ok' };
    expect(sampleValue(m, 'registry_adapter_request_duration_seconds_bucket', { ...ok, le: '0.0025' })).toBe(0);
    expect(sampleValue(m, 'registry_adapter_request_duration_seconds_bucket', { ...ok, le: '0.005' })).toBe(1);
    expect(sampleValue(m, 'registry_adapter_request_duration_seconds_sum', ok)).toBeCloseTo(0.003, 9);
    expect(sampleValue(m, 'registry_adapter_request_duration_seconds_count', ok)).toBe(1);
    // Past the last bound: only +Inf.
    const slow = { adapter: 'consul', operation: 'health.service', outcome: 'forbidden' };
    expect(sampleValue(m, 'registry_adapter_request_duration_seconds_bucket', { ...slow, le: '30' })).toBe(0);
    expect(sampleValue(m, 'registry_adapter_request_duration_seconds_bucket', { ...slow, le: '+Inf' })).toBe(1);
  });

  it('refuses an operation that was not declared, a bad name, and one past the bounds, at declaration', () => {
    const { metrics } = setUp();
    const dns = metrics.adapter('dns', ['query']);
    expect(() => dns.operation('made-up')).toThrow(MetricsDeclarationError);
    expect(() => metrics.adapter('Bad Name')).toThrow(MetricsDeclarationError);
    expect(() => dns.declare(['has "quotes"'])).toThrow(MetricsDeclarationError);
    expect(() => dns.declare(['line\nbreak'])).toThrow(MetricsDeclarationError);
    expect(() => dns.pool('No Pool', new HeldShares({ what: 'x', peerSetting: 'y', peerMax: 1, principalMax: 1 }))).toThrow(MetricsDeclarationError);
    // Declaring again is the same recorder, not a second series.
    expect(metrics.adapter('dns', ['query']).operation('query')).toBe(dns.operation('query'));
    const many = Array.from({ length: adapterMetricsLimits.operationsPerAdapterMax }, (_, i) => `op-${i}`);
    const big = metrics.adapter('big', many);
    expect(big.operations.size).toBe(adapterMetricsLimits.operationsPerAdapterMax);
    expect(() => big.declare(['one-more'])).toThrow(/more than 128 operations/);
    // dns and big so far: fill up to the bound.
    for (let i = 2; i < adapterMetricsLimits.adaptersMax; i++) metrics.adapter(`a${i}`);
    expect(() => metrics.adapter('past_the_bound')).toThrow(/more than 16 adapters/);
  });

  it('reads held slots at scrape time, counts refusals by cap, and lists only the heaviest principals', async () => {
    const { metrics, scrape } = setUp();
    const shares = new HeldShares({ what: 'xDS streams', peerSetting: 'xds.maxStreams', peerMax: 40, principalMax: 8 });
    const streams = metrics.adapter('xds').pool('streams', shares);
    // Seven principals holding 1..7 streams each: only the five heaviest are listed.
    for (let p = 1; p <= 7; p++) for (let i = 0; i < p; i++) shares.take(`token:t${p}`);
    const refusal = shares.take('token:t7');
    expect(refusal.held).toBe(true); // t7 holds 8 now, its share
    const refused = shares.take('token:t7');
    expect(refused.held).toBe(false);
    if (!refused.held) streams.refused(refused.cap);
    streams.refused('peer');
    const m = await scrape();
    expect(sampleValue(m, 'registry_adapter_held', { adapter: 'xds', pool: 'streams' })).toBe(29);
    expect(sampleValue(m, 'registry_adapter_held_refused_total', { adapter: 'xds', pool: 'streams', cap: 'principal' })).toBe(1);
    expect(sampleValue(m, 'registry_adapter_held_refused_total', { adapter: 'xds', pool: 'streams', cap: 'peer' })).toBe(1);
    const principals = m.get('registry_adapter_held_by_principal')!.samples;
    expect(principals.map((s) => [s.labels.principal, s.value])).toEqual([
      ['token:t7', 8], ['token:t6', 6], ['token:t5', 5], ['token:t4', 4], ['token:t3', 3],
    ]);
    expect(principals.length).toBe(adapterMetricsLimits.heaviestPrincipals);
  });

  it('counts pushes and the time from the change to each push on the peer’s clock', async () => {
    const { time, metrics, scrape } = setUp();
    const pushes = metrics.adapter('consul').pushes;
    let m = await scrape();
    expect(sampleValue(m, 'registry_adapter_pushes_total', { adapter: 'consul' })).toBe(0);
    const changedAtMs = time.nowMs;
    time.nowMs += 20;
    pushes.pushed(changedAtMs, 3);
    time.nowMs += 400;
    pushes.pushed(changedAtMs);
    m = await scrape();
    expect(sampleValue(m, 'registry_adapter_pushes_total', { adapter: 'consul' })).toBe(4);
    expect(sampleValue(m, 'registry_adapter_push_delay_seconds_bucket', { adapter: 'consul', le: '0.025' })).toBe(3);
    expect(sampleValue(m, 'registry_adapter_push_delay_seconds_bucket', { adapter: 'consul', le: '0.5' })).toBe(4);
    expect(sampleValue(m, 'registry_adapter_push_delay_seconds_sum', { adapter: 'consul' })).toBeCloseTo(0.06 + 0.42, 9);
  });

  it('counts DNS queries by transport, type and response code, and UDP truncations, with bounded labels', async () => {
    const { metrics, scrape } = setUp();
    metrics.dns.answered('udp', 33, 0);
    metrics.dns.answered('udp', 'SRV', 0);
    metrics.dns.answered('tcp', 1, 3);
    metrics.dns.answered('udp', 65_280, 9); // a private type and an unnamed rcode
    metrics.dns.truncatedUdp();
    const m = await scrape();
    expect(sampleValue(m, 'registry_dns_queries_total', { transport: 'udp', type: 'SRV', rcode: 'NOERROR' })).toBe(2);
    expect(sampleValue(m, 'registry_dns_queries_total', { transport: 'tcp', type: 'A', rcode: 'NXDOMAIN' })).toBe(1);
    expect(sampleValue(m, 'registry_dns_queries_total', { transport: 'udp', type: 'other', rcode: 'other' })).toBe(1);
    expect(sampleValue(m, 'registry_dns_udp_truncated_total', {})).toBe(1);
  });

  it('counts xDS ACKs and NACKs by resource type, unknown type URLs as other', async () => {
    const { metrics, scrape } = setUp();
    metrics.xds.ack('type.googleapis.com/envoy.config.listener.v3.Listener');
    metrics.xds.ack('type.googleapis.com/envoy.config.listener.v3.Listener');
    metrics.xds.nack('type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment');
    metrics.xds.nack('type.googleapis.com/made.up.Type');
    const m = await scrape();
    expect(sampleValue(m, 'registry_xds_acks_total', { type: 'listener' })).toBe(2);
    expect(sampleValue(m, 'registry_xds_acks_total', { type: 'cluster' })).toBe(0);
    expect(sampleValue(m, 'registry_xds_nacks_total', { type: 'endpoint' })).toBe(1);
    expect(sampleValue(m, 'registry_xds_nacks_total', { type: 'other' })).toBe(1);
    expect(m.get('registry_xds_nacks_total')!.samples).toHaveLength(5);
  });

  it('sums each adapter’s requests, refused requests, slots refused at a cap and slots held, for the dashboard', () => {
    const { metrics } = setUp();
    const shares = new HeldShares({ what: 'streams', peerSetting: 's', peerMax: 2, principalMax: 2 });
    const native = metrics.adapter('native', ['GET /v1/services']);
    const pool = native.pool('streams', shares);
    shares.take('address:10.0.0.1');
    pool.refused('peer');
    const services = native.operation('GET /v1/services');
    for (const outcome of ['ok', 'limited', 'unauthenticated', 'forbidden', 'bad_input', 'error'] as const) services.observe(outcome, 0.001);
    expect(native.totals()).toEqual({
      requests: 6,
      refused: 3,
      refusedAtCap: 1,
      held: 1,
      byOutcome: { ok: 1, bad_input: 1, unauthenticated: 1, forbidden: 1, limited: 1, error: 1 },
    });
  });

  it('maps HTTP statuses to outcomes', () => {
    expect([200, 204, 304, 400, 401, 403, 404, 413, 429, 500, 503].map(outcomeOfStatus)).toEqual([
      'ok', 'ok', 'ok', 'bad_input', 'unauthenticated', 'forbidden', 'bad_input', 'bad_input', 'limited', 'error', 'error',
    ]);
  });
});
