import { describe, expect, it } from 'vitest';
import { clusterStatus, type ClusterStatusSources } from '../../../src/cluster-status.js';
import { NodeMetrics, type MetricsSources } from '../../../src/metrics/node-metrics.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.js';

/** Copies exactly the members an interface names: what is not listed is not there to reach through. */
function only<T extends object>(from: T, keys: readonly (keyof T)[]): T {
  return Object.fromEntries(keys.map((key) => [key, from[key]])) as T;
}

describe('the metrics and /v1/cluster read only what their interfaces name', () => {
  it('scrapes every series from the members of MetricsSources alone', async () => {
    const { node } = await createTestNode();
    node.registry.register(instance('i-1'));
    const keys = ['clock', 'store', 'registry', 'ready', 'heartbeats', 'membership', 'replicator', 'inbox', 'antiEntropy', 'safety', 'watch',
      'adapterMetrics', 'transport', 'bootstrapResult', 'bootstrapDurationMs'] as const;
    const sources: MetricsSources = { ...only<MetricsSources>(node, keys), ready: false, heartbeats: { renewed: 7, relayed: 0, takeover: 0, unknown: 1 } };
    const metrics = new NodeMetrics(sources);
    try {
      const scraped = parsePrometheusText(await metrics.scrape());
      expect(sampleValue(scraped, 'registry_ready', {})).toBe(0);
      expect(sampleValue(scraped, 'registry_heartbeats_total', { outcome: 'renewed' })).toBe(7);
      expect(sampleValue(scraped, 'registry_instances', { namespace: 'default', status: 'UP' })).toBe(1);
      expect(sampleValue(scraped, 'registry_self_preservation_active', {})).toBe(0);
    } finally {
      metrics.stop();
      await node.stop();
    }
  });

  it('builds the cluster view from the members of ClusterStatusSources alone', async () => {
    const { node } = await createTestNode();
    const keys = [
      'config', 'ready', 'startedAtMs', 'bootstrapResult', 'store', 'hlc', 'registry', 'membership',
      'replicator', 'inbox', 'antiEntropy', 'reaper', 'safety', 'transport',
    ] as const;
    try {
      expect(await clusterStatus(only<ClusterStatusSources>(node, keys))).toEqual(await node.status());
    } finally {
      await node.stop();
    }
  });
});
