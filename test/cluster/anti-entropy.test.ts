import { describe, expect, it, vi } from 'vitest';
import { RegistryError } from '../../src/errors.js';
import { bucketOfSub } from '../../src/registry/digest.js';
import { instanceKeyString, type StoredInstance } from '../../src/registry/types.js';
import type { RoundResult } from '../../src/replication/anti-entropy.js';
import { RECONCILE_PART_ENTRIES, RECONCILE_PART_SUB_BUCKETS, RECONCILE_PARTS_IN_FLIGHT } from '../../src/replication/reconcile-parts.js';
import type { ReconcileRequest } from '../../src/transport/peer-calls.js';
import { instance, type TestCluster } from '../support/cluster.js';
import { startCluster, useClusterCleanup } from './helpers.js';

useClusterCleanup();

const INSTANCES = 20_000;
const key = (i: number) => ({ namespace: 'default', service: `svc-${i % 20}`, instanceId: `i-${i}` });

/**
 * Two peers holding the same 20,000 instances (about five in each of the 4,096 digest buckets),
 * then cut apart while each changes `changes / 2` of them: by default 40 keys differ, in about
 * 40 buckets.
 */
async function divergedPair(seed: number, changes = 40, cluster: Record<string, unknown> = {}): Promise<{ c: TestCluster; changed: string[] }> {
  const c = await startCluster({ size: 2, seed, cluster: { antiEntropyIntervalMs: 600_000, ...cluster } });
  const [a, b] = [c.node('peer-a'), c.node('peer-b')];
  for (let i = 0; i < INSTANCES; i++) {
    a.registry.register(instance(`i-${i}`, { service: `svc-${i % 20}`, leaseDurationMs: 600_000 }));
    if (i % 2_000 === 0) await c.advance(10);
  }
  await c.clock.advanceUntil(() => c.converged(), 30_000, 50);
  c.network.partition(['peer-a'], ['peer-b']);
  const changed: string[] = [];
  for (let n = 0; n < changes; n++) {
    const i = (n * 487) % INSTANCES;
    (n % 2 === 0 ? a : b).registry.update(key(i), { status: 'OUT_OF_SERVICE' });
    changed.push(instanceKeyString(key(i)));
  }
  await c.advance(100);
  c.network.heal();
  return { c, changed };
}

/** Runs one anti-entropy round of peer-a with peer-b, in virtual time. */
async function roundOfAWithB(c: TestCluster): Promise<RoundResult | undefined> {
  const a = c.node('peer-a');
  const round = a.antiEntropy.syncWith(a.membership.get('peer-b')!.descriptor);
  await c.advance(100);
  return round;
}

/** Every call `peerId` receives from now on (`onCall` sees each first), with its body. */
function recordedCalls(c: TestCluster, peerId: string, onCall?: (method: string) => void) {
  const api = c.node(peerId).peerApi;
  const calls: Array<{ method: string; body: ReconcileRequest }> = [];
  c.network.attach(peerId, {
    handle: async (method, body) => {
      calls.push({ method, body: body as ReconcileRequest });
      onCall?.(method);
      return api.handle(method, body);
    },
  });
  return calls;
}

/** What `promise` settles to, virtual time running meanwhile. */
async function settledIn<T>(c: TestCluster, promise: Promise<T>): Promise<T> {
  let settled = false;
  void promise.finally(() => (settled = true));
  await c.clock.advanceUntil(() => settled, 120_000, 10);
  return promise;
}

describe('anti-entropy', () => {
  it('lists only the records of the sub-buckets that differ, and converges in one round', async () => {
    const { c, changed } = await divergedPair(31);
    const a = c.node('peer-a');
    const differingSubs = new Set(changed.map((k) => [...a.store.entries()].find((e) => instanceKeyString(e.record) === k)!.subBucket));
    const inThoseSubs = (entries: Iterable<StoredInstance>) => [...entries].filter((e) => differingSubs.has(e.subBucket)).length;
    const inThoseBuckets = [...a.store.entries()].filter((e) => [...differingSubs].some((s) => bucketOfSub(s) === bucketOfSub(e.subBucket))).length;

    const result = await roundOfAWithB(c);
    expect(result).toMatchObject({ inSync: false, pulled: 20, pushed: 20 });
    expect(result!.work!.differingSubBuckets).toBe(differingSubs.size);
    // Exactly peer-a's records in those sub-buckets travel, a fraction of their whole buckets'.
    expect(result!.work!.entriesSent).toBe(inThoseSubs(a.store.entries()));
    expect(result!.work!.entriesSent).toBeLessThan(inThoseBuckets / 2);
    expect(c.converged()).toBe(true);
  });

  it('reconciles whole buckets with a peer of a version without subdigest (it answers 400), and converges', async () => {
    const { c } = await divergedPair(32);
    const oldApi = c.node('peer-b').peerApi;
    const asked: string[] = [];
    c.network.attach('peer-b', {
      handle: (method, body) => {
        asked.push(method);
        if (method === 'subdigest') return Promise.reject(new RegistryError('REG_ERR_VALIDATION', 'params/method must be equal to one of the allowed values'));
        return oldApi.handle(method, body);
      },
    });
    const a = c.node('peer-a');
    const result = await roundOfAWithB(c);
    expect(asked).toContain('subdigest');
    expect(result).toMatchObject({ inSync: false, pulled: 20, pushed: 20 });
    expect(result!.work!.differingSubBuckets).toBeNull();
    // Every record of the differing buckets travels, as before sub-buckets.
    const buckets = new Set<number>();
    for (const entry of a.store.entries()) if (entry.record.data.status === 'OUT_OF_SERVICE') buckets.add(bucketOfSub(entry.subBucket));
    expect(result!.work!.entriesSent).toBeGreaterThan(buckets.size * 2);
    expect(c.converged()).toBe(true);
  });

  it('repairs a large difference in parts of bounded size, and one syncWith chains the rounds it takes', async () => {
    const { c } = await divergedPair(35, 6_000);
    const calls = recordedCalls(c, 'peer-b');
    const a = c.node('peer-a');
    // Nothing else on peer-b passes over its store meanwhile: its reaper is stopped.
    c.node('peer-b').reaper.stop();
    const passes = vi.spyOn(c.node('peer-b').store, 'allServices');
    const syncing = a.antiEntropy.syncWith(a.membership.get('peer-b')!.descriptor);
    const result = await settledIn(c, syncing);

    expect(result).toMatchObject({ inSync: false, pulled: 3_000, pushed: 3_000 });
    expect(c.converged()).toBe(true);
    // About 3,000 of the 4,096 buckets differ: more than one round of 1,024, chained.
    const rounds = calls.filter((call) => call.method === 'digest').length;
    expect(rounds).toBeGreaterThan(1);
    const parts = calls.filter((call) => call.method === 'reconcile');
    expect(parts.length).toBeGreaterThan(rounds);
    for (const part of parts) {
      expect(part.body.entries.length).toBeLessThanOrEqual(RECONCILE_PART_ENTRIES);
      expect(part.body.subBuckets!.length).toBeLessThanOrEqual(RECONCILE_PART_SUB_BUCKETS);
      expect(part.body.subBuckets!.every((sub) => part.body.buckets.includes(bucketOfSub(sub)))).toBe(true);
    }
    // Every part carries its round's buckets: the other side lists each round once.
    expect(new Set(parts.map((part) => part.body.buckets.join(','))).size).toBe(rounds);
    expect(passes).toHaveBeenCalledTimes(rounds);
  });

  it('ends a round at a part that fails: the parts not sent yet are not sent, and the next round repairs', async () => {
    // One round over every differing bucket: about 5,600 sub-buckets, six parts.
    const { c } = await divergedPair(36, 6_000, { antiEntropyMaxBucketsPerRound: 4_096 });
    let refused = false;
    const calls = recordedCalls(c, 'peer-b', (method) => {
      if (method !== 'reconcile' || refused) return;
      refused = true;
      throw new RegistryError('REG_ERR_INTERNAL', 'refused for the test');
    });
    const a = c.node('peer-a');
    const failuresBefore = a.antiEntropy.stats.failures;
    const result = await settledIn(c, a.antiEntropy.syncWith(a.membership.get('peer-b')!.descriptor));
    expect(result).toBeUndefined();
    expect(a.antiEntropy.stats.failures).toBe(failuresBefore + 1);
    // The parts in flight when the first failed, no more: the round had six to send.
    expect(calls.filter((call) => call.method === 'reconcile').length).toBe(RECONCILE_PARTS_IN_FLIGHT);
    expect(c.converged()).toBe(false);

    await settledIn(c, a.antiEntropy.syncWith(a.membership.get('peer-b')!.descriptor));
    expect(c.converged()).toBe(true);
  });

  it('starts no chained round once the peer stops', async () => {
    const { c } = await divergedPair(37, 6_000);
    const a = c.node('peer-a');
    let digests = 0;
    recordedCalls(c, 'peer-b', (method) => {
      if (method === 'digest' && ++digests === 2) a.antiEntropy.stop();
    });
    await settledIn(c, a.antiEntropy.syncWith(a.membership.get('peer-b')!.descriptor));
    // Four rounds were needed (about 3,000 of 4,096 buckets differ, 1,024 a round).
    expect(digests).toBe(2);
    expect(c.converged()).toBe(false);
  });

  it('refuses a reconcile of more buckets or sub-buckets than the digest has, or of numbers past it', async () => {
    const c = await startCluster({ size: 2, seed: 38 });
    const api = c.node('peer-b').peerApi;
    const refused = async (body: Record<string, unknown>) => expect(api.handle('reconcile', { from: 'peer-a', entries: [], ...body })).rejects.toMatchObject({ code: 'REG_ERR_VALIDATION' });
    await refused({ buckets: new Array(4_097).fill(0) });
    await refused({ buckets: [4_096] });
    await refused({ buckets: [0], subBuckets: [65_536] });
    await refused({ buckets: [0], subBuckets: new Array(65_537).fill(0) });
    // 2 bytes a bucket of 4,096, in base64: 10,924 characters at most.
    await refused({ buckets: [0], subBuckets: [0], round: 'A'.repeat(10_925) });
  });

  it('answers a reconcile limited to sub-buckets with the records of those sub-buckets only', async () => {
    const { c, changed } = await divergedPair(33);
    const b = c.node('peer-b');
    const entryOf = (k: string) => [...b.store.entries()].find((e) => instanceKeyString(e.record) === k)!;
    // peer-b's changes (the odd ones); ask about the sub-bucket of the first only, listing nothing.
    const target = entryOf(changed[1]!);
    // The store's pass begins a turn (a timer of the clock) after it is asked.
    const answering = b.antiEntropy.handleReconcile({ from: 'peer-a', buckets: [bucketOfSub(target.subBucket)], subBuckets: [target.subBucket], entries: [] });
    await c.advance(10);
    const answer = await answering;
    const expected = [...b.store.entries()].filter((e) => e.subBucket === target.subBucket).map((e) => e.record.instanceId);
    expect(answer.records.map((r) => r.instanceId).sort()).toEqual(expected.sort());
    expect(answer.want).toEqual([]);
  });

  it("answers subdigest for the digest's own buckets only, no more of them than it has", async () => {
    const c = await startCluster({ size: 2, seed: 34 });
    const api = c.node('peer-b').peerApi;
    const answer = await api.handle('subdigest', { from: 'peer-a', buckets: [0, 4_095] });
    expect(Buffer.from(answer.hashes, 'base64')).toHaveLength(2 * 16 * 8);
    await expect(api.handle('subdigest', { from: 'peer-a', buckets: [4_096] })).rejects.toMatchObject({ code: 'REG_ERR_VALIDATION' });
    await expect(api.handle('subdigest', { from: 'peer-a', buckets: new Array(4_097).fill(0) })).rejects.toMatchObject({ code: 'REG_ERR_VALIDATION' });
  });
});
