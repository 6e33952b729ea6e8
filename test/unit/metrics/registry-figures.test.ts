import { describe, expect, it } from 'vitest';
import { NodeMetrics, type MetricsSources } from '../../../src/metrics/node-metrics.js';
import { gatherFigures, gatherFiguresSliced, SCRAPE_SLICE_INSTANCES } from '../../../src/metrics/registry-figures.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.js';

describe('the registry figures of a scrape', () => {
  it('are counted in slices, yielding between them, to the figures of a one-piece count', async () => {
    const { node } = await createTestNode();
    try {
      for (let i = 0; i < 23; i++) node.registry.register({ ...instance(`i-${i}`), service: `svc-${i % 4}`, namespace: i % 5 === 0 ? 'team-a' : 'default' });
      node.registry.update({ ...instance('i-1'), service: 'svc-1' }, { status: 'DOWN' });
      node.registry.cancel({ ...instance('i-2'), service: 'svc-2' });
      let yields = 0;
      const view = node.registry.leaseView();
      const sliced = await gatherFiguresSliced(node.store, view, async () => void (yields += 1), 5);
      // 23 instances (one a tombstone) in slices of 5: five slices, four yields between them.
      expect(yields).toBe(4);
      expect(sliced).toEqual(gatherFigures(node.store, view));
      expect(sliced.tombstones).toBe(1);
      expect(sliced.live).toBe(22);
      expect(sliced.instances.get('default')?.get('DOWN')).toBe(1);
    } finally {
      await node.stop();
    }
  });

  it('are gathered in slices of SCRAPE_SLICE_INSTANCES by a scrape', async () => {
    const { node } = await createTestNode();
    const count = SCRAPE_SLICE_INSTANCES * 2 + 1;
    for (let i = 0; i < count; i++) node.registry.register(instance(`i-${i}`, { service: `svc-${i % 3}` }));
    let yields = 0;
    const metrics = new NodeMetrics(node as unknown as MetricsSources, { yieldTurn: async () => void (yields += 1) });
    try {
      const scraped = parsePrometheusText(await metrics.scrape());
      expect(yields).toBe(2);
      expect(sampleValue(scraped, 'registry_instances', { namespace: 'default', status: 'UP' })).toBe(count);
    } finally {
      metrics.stop();
      await node.stop();
    }
  });
});
