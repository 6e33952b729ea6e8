import { describe, expect, it } from 'vitest';
import { restoreRecords } from '../../../src/persistence/restore.js';
import { collectRecords, SNAPSHOT_COLLECT_RECORDS } from '../../../src/persistence/snapshot.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';

describe('a snapshot collects the store', () => {
  it('in turns of perTurn records, yielding between them, every record once', async () => {
    const { node } = await createTestNode();
    try {
      for (let i = 0; i < 45; i++) node.registry.register(instance(`i-${i}`, { service: `svc-${i % 3}` }));
      node.registry.cancel(instance('i-3', { service: 'svc-0' }));
      let yields = 0;
      const records = await collectRecords(node.store.entries(), async () => void (yields += 1), 20);
      expect(yields).toBe(2);
      expect(records).toEqual(Array.from(node.store.entries(), (entry) => entry.record));
      expect(SNAPSHOT_COLLECT_RECORDS).toBe(20_000);
    } finally {
      await node.stop();
    }
  });

  it('may hold a record older than a write made while it was suspended; replayed with the log, the newer wins', async () => {
    const { node } = await createTestNode();
    const restarted = await createTestNode();
    try {
      for (let i = 0; i < 6; i++) node.registry.register(instance(`i-${i}`));
      let written = false;
      const records = await collectRecords(
        node.store.entries(),
        async () => {
          if (!written) node.registry.update(instance('i-0'), { status: 'DOWN' });
          written = true;
        },
        2,
      );
      expect(records.find((record) => record.instanceId === 'i-0')?.data.status).toBe('UP');
      // The write went to the log's new segment: the restart replays it over the snapshot.
      const logged = node.store.get(instance('i-0'))!.record;
      const target = restarted.node.registry;
      const nowMs = restarted.clock.nowMs();
      restoreRecords(target, restarted.node.hlc, [...records, logged], { nowMs, tombstoneTtlMs: 60_000 });
      expect(target.store.get(instance('i-0'))?.record.data.status).toBe('DOWN');
      expect(target.store.size).toBe(6);
    } finally {
      await node.stop();
      await restarted.node.stop();
    }
  });
});
