import { afterEach, describe, expect, it } from 'vitest';
import { NodeMetrics } from '../../src/metrics/node-metrics.js';
import { instance, type TestCluster } from '../support/cluster.js';
import { parsePrometheusText, sampleValue, type Family } from '../support/prom-text.js';
import { heartbeatFor, startCluster, useClusterCleanup } from './helpers.js';

useClusterCleanup();

const collectors: NodeMetrics[] = [];
afterEach(() => {
  for (const metrics of collectors.splice(0)) metrics.stop();
});

function metricsOf(c: TestCluster, id: string): () => Promise<Map<string, Family>> {
  const metrics = new NodeMetrics(c.node(id));
  collectors.push(metrics);
  return async () => parsePrometheusText(await metrics.scrape());
}

describe('metrics of a cluster', () => {
  it('shows replication to each peer, the queue while a peer is away, and the peer going down and back', async () => {
    const c = await startCluster({ size: 3, seed: 21 });
    const scrapeA = metricsOf(c, 'peer-a');
    const scrapeB = metricsOf(c, 'peer-b');
    let m = await scrapeA();
    expect(sampleValue(m, 'registry_peer_state', { peer: 'peer-b', state: 'up' })).toBe(1);
    expect(sampleValue(m, 'registry_peer_state', { peer: 'peer-b', state: 'down' })).toBe(0);
    const batchesBefore = sampleValue(m, 'registry_replication_batches_total', { peer: 'peer-b' })!;

    c.node('peer-a').registry.register(instance('i-1'));
    c.node('peer-a').registry.register(instance('i-2'));
    await c.advance(50);
    m = await scrapeA();
    expect(sampleValue(m, 'registry_replication_batches_total', { peer: 'peer-b' })).toBeGreaterThan(batchesBefore);
    expect(sampleValue(m, 'registry_replication_records_total', { peer: 'peer-c' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(m, 'registry_replication_queue_depth', { peer: 'peer-b' })).toBe(0);
    expect(sampleValue(m, 'registry_replication_lag_seconds', { peer: 'peer-b' })).toBe(0);
    expect(sampleValue(m, 'registry_peer_last_contact_age_seconds', { peer: 'peer-b' })).toBeLessThan(5);
    const b = await scrapeB();
    expect(sampleValue(b, 'registry_inbound_records_total', { result: 'applied' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(b, 'registry_inbound_batches_total')).toBeGreaterThan(0);
    expect(sampleValue(b, 'registry_replication_delay_seconds', { quantile: '1' })).toBeGreaterThan(0);

    // peer-b goes away: writes queue up for it, with a growing lag, and it turns down.
    c.network.partition(['peer-a', 'peer-c'], ['peer-b']);
    c.node('peer-a').registry.register(instance('i-3'));
    await c.advance(1_000);
    m = await scrapeA();
    // The batch is on its way (it waits for the call's 5 s timeout)...
    expect(sampleValue(m, 'registry_replication_in_flight', { peer: 'peer-b' })).toBe(1);
    // ...then it fails, waits in the queue (ageing) for its retry, goes again, and so on.
    await c.advance(5_000);
    for (let i = 0; i < 100; i++) {
      m = await scrapeA();
      if (sampleValue(m, 'registry_replication_queue_depth', { peer: 'peer-b' }) === 1) break;
      await c.advance(50);
    }
    expect(sampleValue(m, 'registry_replication_queue_depth', { peer: 'peer-b' })).toBe(1);
    expect(sampleValue(m, 'registry_replication_lag_seconds', { peer: 'peer-b' })).toBeGreaterThan(5);
    const failures = ['congestion', 'transient', 'permanent'].reduce(
      (sum, kind) => sum + sampleValue(m, 'registry_replication_failures_total', { peer: 'peer-b', kind })!,
      0,
    );
    expect(failures).toBeGreaterThan(0);
    await c.advance(10_000);
    m = await scrapeA();
    expect(sampleValue(m, 'registry_peer_state', { peer: 'peer-b', state: 'down' })).toBe(1);
    expect(sampleValue(m, 'registry_peer_state', { peer: 'peer-b', state: 'up' })).toBe(0);

    c.network.heal();
    await c.clock.advanceUntil(() => c.converged() && c.node('peer-a').membership.get('peer-b')?.state === 'up', 30_000, 50);
    m = await scrapeA();
    expect(sampleValue(m, 'registry_peer_state', { peer: 'peer-b', state: 'up' })).toBe(1);
    expect(sampleValue(m, 'registry_replication_queue_depth', { peer: 'peer-b' })).toBe(0);
  });

  it('counts anti-entropy rounds and the keys they repair, and drops when a queue overflows', async () => {
    const c = await startCluster({ size: 2, seed: 22, cluster: { replicationQueueMaxRecords: 5 } });
    const scrapeA = metricsOf(c, 'peer-a');
    await c.advance(10_000);
    let m = await scrapeA();
    expect(sampleValue(m, 'registry_anti_entropy_rounds_total')).toBeGreaterThan(0);
    expect(sampleValue(m, 'registry_anti_entropy_rounds_in_sync_total')).toBeGreaterThan(0);
    c.network.partition(['peer-a'], ['peer-b']);
    for (let i = 0; i < 20; i++) c.node('peer-a').registry.register(instance(`a-${i}`, { leaseDurationMs: 600_000 }));
    await c.advance(20_000);
    m = await scrapeA();
    expect(sampleValue(m, 'registry_replication_dropped_total', { peer: 'peer-b' })).toBeGreaterThan(0);
    expect(sampleValue(m, 'registry_anti_entropy_failures_total')).toBeGreaterThanOrEqual(0);
    c.network.heal();
    await c.clock.advanceUntil(() => c.converged(), 60_000, 100);
    m = await scrapeA();
    const scrapeB = metricsOf(c, 'peer-b');
    const b = await scrapeB();
    const repaired =
      sampleValue(m, 'registry_anti_entropy_repaired_keys_total', { direction: 'pushed' })! +
      sampleValue(b, 'registry_anti_entropy_repaired_keys_total', { direction: 'pulled' })!;
    expect(repaired).toBeGreaterThan(0);
  });

  it('counts instances hidden for a down owner, orphan sweeps, takeovers and the partition guard', async () => {
    const c = await startCluster({ size: 3, seed: 23, cluster: { orphanTimeoutMs: 60_000, partitionGuardRatio: 0.5, ownerDownGraceMs: 0 } });
    const scrapeA = metricsOf(c, 'peer-a');
    c.node('peer-c').registry.register(instance('gone-1'));
    c.node('peer-c').registry.register(instance('moving'));
    for (let i = 0; i < 4; i++) c.node('peer-a').registry.register(instance(`a-${i}`, { leaseDurationMs: 600_000 }));
    await c.advance(100);
    c.crash('peer-c');
    // The client of `moving` fails over to peer-a: one takeover.
    await heartbeatFor(c, 'peer-a', ['moving'], 15_000);
    let m = await scrapeA();
    // The first heartbeat came while peer-c still looked up (relayed), the next one took over.
    expect(sampleValue(m, 'registry_heartbeats_total', { outcome: 'relayed' })).toBe(1);
    expect(sampleValue(m, 'registry_heartbeats_total', { outcome: 'takeover' })).toBe(1);
    await heartbeatFor(c, 'peer-a', ['moving'], 40_000);
    m = await scrapeA();
    expect(sampleValue(m, 'registry_heartbeats_total', { outcome: 'renewed' })).toBeGreaterThan(0);
    expect(sampleValue(m, 'registry_evictions_total', { namespace: 'default', reason: 'hidden' })).toBe(1);
    expect(sampleValue(m, 'registry_partition_guard_active')).toBe(0);
    await heartbeatFor(c, 'peer-a', ['moving'], 60_000);
    m = await scrapeA();
    expect(sampleValue(m, 'registry_evictions_total', { namespace: 'default', reason: 'orphan' })).toBe(1);
  });

  it('shows the partition guard holding the instances of down peers', async () => {
    const c = await startCluster({ size: 3, seed: 24, cluster: { partitionGuardRatio: 0.3, ownerDownGraceMs: 0 } });
    const scrapeA = metricsOf(c, 'peer-a');
    for (let i = 0; i < 3; i++) c.node('peer-b').registry.register(instance(`b-${i}`));
    c.node('peer-a').registry.register(instance('a-0', { leaseDurationMs: 600_000 }));
    await c.advance(100);
    c.crash('peer-b');
    await c.advance(45_000);
    const m = await scrapeA();
    expect(sampleValue(m, 'registry_partition_guard_active')).toBe(1);
    expect(sampleValue(m, 'registry_partition_guard_down_owned_ratio')).toBe(0.75);
    expect(sampleValue(m, 'registry_eviction_held', { guard: 'partitionGuard' })).toBe(3);
    expect(sampleValue(m, 'registry_instances', { namespace: 'default', status: 'UP' })).toBe(4);
  });
});
