import { describe, expect, it } from 'vitest';
import { TOMBSTONE_PURGE_MAX_PER_RUN } from '../../../src/lease/reaper.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';

describe('the reaper purges expired tombstones', () => {
  it('at most TOMBSTONE_PURGE_MAX_PER_RUN per run, the rest in the next runs', async () => {
    const { node, clock } = await createTestNode({ start: false });
    try {
      const count = TOMBSTONE_PURGE_MAX_PER_RUN + 7;
      for (let i = 0; i < count; i++) node.registry.register(instance(`i-${i}`, { service: `svc-${i % 3}`, leaseDurationMs: 600_000 }));
      for (let i = 0; i < count; i++) node.registry.cancel(instance(`i-${i}`, { service: `svc-${i % 3}` }));
      node.registry.register(instance('alive', { leaseDurationMs: 3_600_000 }));
      await clock.advance(node.config.cluster.tombstoneTtlMs + 1);
      node.registry.heartbeat(instance('alive'));
      let purged = 0;
      node.store.onPurge(() => (purged += 1));
      expect(node.reaper.runOnce().tombstonesPurged).toBe(TOMBSTONE_PURGE_MAX_PER_RUN);
      expect(purged).toBe(TOMBSTONE_PURGE_MAX_PER_RUN);
      expect(node.store.size).toBe(count - TOMBSTONE_PURGE_MAX_PER_RUN + 1);
      expect(node.reaper.runOnce().tombstonesPurged).toBe(7);
      expect(node.store.size).toBe(1);
      expect(node.reaper.runOnce().tombstonesPurged).toBe(0);
      expect(node.store.get(instance('alive'))?.record.deleted).toBeNull();
    } finally {
      await node.stop();
    }
  });
});
