import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { silentLogger } from '../../../src/log/logger.js';
import { instanceKeyString } from '../../../src/registry/types.js';
import { AntiEntropy } from '../../../src/replication/anti-entropy.js';
import { SUB_BUCKETS } from '../../../src/registry/digest.js';
import { encodeRoundSubBuckets, RECONCILE_ANSWER_RECORDS } from '../../../src/replication/reconcile-parts.js';
import { RECONCILE_SCAN_SLICE_RECORDS } from '../../../src/replication/store-scans.js';
import type { DigestEntry } from '../../../src/transport/peer-calls.js';
import { instance } from '../../support/cluster.js';
import { createTestNode, type TestNode } from '../../support/node.js';

/** A node of `count` instances and its anti-entropy, whose yields `onYield` sees (counted from 1). */
async function reconciling(count: number, onYield: (yields: number, node: TestNode['node']) => void = () => undefined) {
  const { clock, node } = await createTestNode();
  for (let i = 0; i < count; i++) node.registry.register(instance(`i-${i}`, { service: `svc-${i % 5}` }));
  const counted = { yields: 0 };
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
      yieldTurn: async () => onYield(++counted.yields, node),
    },
    { selfId: node.registry.peerId, selfRegion: 'local', intervalMs: 1_000, crossRegionIntervalMs: 1_000, callTimeoutMs: 1_000, maxBucketsPerRound: 8, pushBatchMaxRecords: 100 },
  );
  const everyBucket = Array.from({ length: node.store.digest.bucketCount }, (_, b) => b);
  return { node, antiEntropy, counted, everyBucket };
}

describe('a reconcile answer', () => {
  it('reads the store in slices of RECONCILE_SCAN_SLICE_RECORDS, yielding between them, and answers what the records say', async () => {
    const { node, antiEntropy, counted, everyBucket } = await reconciling(RECONCILE_SCAN_SLICE_RECORDS * 2 + 5, (yields, peer) => {
      // A write while the scan is suspended between two slices: the answer carries the record as stored now.
      if (yields === 2) peer.registry.update(instance('i-0', { service: 'svc-0' }), { status: 'DOWN' });
    });
    try {
      // The caller holds every record as it is but i-0, and one this peer lacks.
      const entries: DigestEntry[] = [...node.store.entries()].filter((entry) => entry.record.instanceId !== 'i-0').map((entry) => [instanceKeyString(entry.record), entry.record.version, 0]);
      entries.push(['default/svc-0/nobody', '1-a', 0]);
      const answer = await antiEntropy.handleReconcile({ from: 'peer-x', buckets: everyBucket, entries });
      // One before the pass begins, one between each two of its slices, one before the answer is made.
      expect(counted.yields).toBe(4);
      expect(answer.records.map((record) => [record.instanceId, record.data.status])).toEqual([['i-0', 'DOWN']]);
      expect(answer.want).toEqual(['default/svc-0/nobody']);
    } finally {
      await node.stop();
    }
  });

  it('answers a part of a round with at most RECONCILE_ANSWER_RECORDS records, the next round the rest; an older caller whole', async () => {
    const { node, antiEntropy, everyBucket } = await reconciling(RECONCILE_ANSWER_RECORDS + 5);
    try {
      const everySub = everyBucket.flatMap((bucket) => Array.from({ length: SUB_BUCKETS }, (_, n) => bucket * SUB_BUCKETS + n));
      const part = { from: 'peer-x', buckets: everyBucket, subBuckets: everySub, round: encodeRoundSubBuckets(everyBucket, everySub) };
      const first = await antiEntropy.handleReconcile({ ...part, entries: [] });
      expect(first.records).toHaveLength(RECONCILE_ANSWER_RECORDS);
      expect(new Set(first.records.map((record) => record.instanceId)).size).toBe(RECONCILE_ANSWER_RECORDS);
      // The caller now holds those: its next round lists them, and is answered the rest.
      const held: DigestEntry[] = first.records.map((record) => [instanceKeyString(record), record.version, 0]);
      const next = await antiEntropy.handleReconcile({ ...part, entries: held });
      expect(next.records).toHaveLength(5);
      expect(next.want).toEqual([]);

      const whole = await antiEntropy.handleReconcile({ from: 'peer-y', buckets: everyBucket, entries: [] });
      expect(whole.records).toHaveLength(RECONCILE_ANSWER_RECORDS + 5);
    } finally {
      await node.stop();
    }
  });
});
