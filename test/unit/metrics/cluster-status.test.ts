import { describe, expect, it } from 'vitest';
import { clusterStatus } from '../../../src/cluster-status.js';
import { SCRAPE_SLICE_INSTANCES } from '../../../src/metrics/registry-figures.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';

describe('/v1/cluster counts the served instances in turns', () => {
  it(`yields every ${SCRAPE_SLICE_INSTANCES} records while it counts, and counts what reads serve`, async () => {
    const { node } = await createTestNode();
    try {
      const records = 2 * SCRAPE_SLICE_INSTANCES + 2_000;
      // Over two services: one holds at most limits.instancesPerServiceMax (10,000).
      for (let i = 0; i < records; i++) node.registry.register(instance(`i-${i}`, { service: i % 2 === 0 ? 'orders' : 'billing' }));
      node.registry.cancel({ namespace: 'default', service: 'orders', instanceId: 'i-0' });
      let yields = 0;
      const status = await clusterStatus(node, async () => {
        yields += 1;
      });
      expect(yields).toBe(2);
      expect(status.self).toMatchObject({ records, instances: records - 1 });
    } finally {
      await node.stop();
    }
  });

  it('shares one count among the requests that arrive while it is gathered, and counts afresh after', async () => {
    const { node } = await createTestNode();
    try {
      node.registry.register(instance('i-1'));
      const first = node.status();
      expect(node.status()).toBe(first);
      expect((await first).self.instances).toBe(1);
      node.registry.register(instance('i-2'));
      const next = node.status();
      expect(next).not.toBe(first);
      expect((await next).self.instances).toBe(2);
    } finally {
      await node.stop();
    }
  });
});
