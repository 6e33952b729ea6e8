import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { silentLogger } from '../../../src/log/logger.js';
import { AntiEntropy, RECONCILE_SCAN_SLICE_RECORDS } from '../../../src/replication/anti-entropy.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';

describe('a reconcile scan', () => {
  it('reads the store in slices of RECONCILE_SCAN_SLICE_RECORDS, yielding between them, and answers what the records say', async () => {
    const { clock, node } = await createTestNode();
    try {
      const count = RECONCILE_SCAN_SLICE_RECORDS * 2 + 5;
      for (let i = 0; i < count; i++) node.registry.register(instance(`i-${i}`, { service: `svc-${i % 5}` }));
      let yields = 0;
      let replaced = false;
      const antiEntropy = new AntiEntropy(
        {
          clock,
          rng: seededRng(1),
          registry: node.registry,
          inbox: node.inbox,
          transport: node.transport,
          logger: silentLogger,
          livePeers: () => [],
          reportContact: () => undefined,
          yieldTurn: async () => {
            yields += 1;
            // A write while the scan is suspended: the answer carries the record as stored now.
            if (!replaced) node.registry.update(instance('i-0', { service: 'svc-0' }), { status: 'DOWN' });
            replaced = true;
          },
        },
        { selfId: node.registry.peerId, selfRegion: 'local', intervalMs: 1_000, crossRegionIntervalMs: 1_000, callTimeoutMs: 1_000, maxBucketsPerRound: 8, pushBatchMaxRecords: 100 },
      );
      const bucketCount = node.store.digest.bucketCount;
      const answer = await antiEntropy.handleReconcile({ from: 'peer-x', buckets: Array.from({ length: bucketCount }, (_, b) => b), entries: [['default/svc-0/nobody', '1-a', 0]] });
      expect(yields).toBe(2);
      expect(answer.records).toHaveLength(count);
      expect(answer.records.find((record) => record.instanceId === 'i-0')?.data.status).toBe('DOWN');
      expect(answer.want).toEqual(['default/svc-0/nobody']);
    } finally {
      await node.stop();
    }
  });
});
