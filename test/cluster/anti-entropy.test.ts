import { describe, expect, it } from 'vitest';
import { RegistryError } from '../../src/errors.js';
import { bucketOfSub } from '../../src/registry/digest.js';
import { instanceKeyString, type StoredInstance } from '../../src/registry/types.js';
import type { RoundResult } from '../../src/replication/anti-entropy.js';
import { instance, type TestCluster } from '../support/cluster.js';
import { startCluster, useClusterCleanup } from './helpers.js';

useClusterCleanup();

const INSTANCES = 20_000;
const key = (i: number) => ({ namespace: 'default', service: `svc-${i % 20}`, instanceId: `i-${i}` });

/**
 * Two peers holding the same 20,000 instances (about five in each of the 4,096 digest buckets),
 * then cut apart while each changes 20 of them: 40 keys differ, in about 40 buckets.
 */
async function divergedPair(seed: number): Promise<{ c: TestCluster; changed: string[] }> {
  const c = await startCluster({ size: 2, seed, cluster: { antiEntropyIntervalMs: 600_000 } });
  const [a, b] = [c.node('peer-a'), c.node('peer-b')];
  for (let i = 0; i < INSTANCES; i++) {
    a.registry.register(instance(`i-${i}`, { service: `svc-${i % 20}`, leaseDurationMs: 600_000 }));
    if (i % 2_000 === 0) await c.advance(10);
  }
  await c.clock.advanceUntil(() => c.converged(), 30_000, 50);
  c.network.partition(['peer-a'], ['peer-b']);
  const changed: string[] = [];
  for (let n = 0; n < 40; n++) {
    const i = n * 487;
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

  it('answers a reconcile limited to sub-buckets with the records of those sub-buckets only', async () => {
    const { c, changed } = await divergedPair(33);
    const b = c.node('peer-b');
    const entryOf = (k: string) => [...b.store.entries()].find((e) => instanceKeyString(e.record) === k)!;
    // peer-b's changes (the odd ones); ask about the sub-bucket of the first only, listing nothing.
    const target = entryOf(changed[1]!);
    const answer = await b.antiEntropy.handleReconcile({ from: 'peer-a', buckets: [bucketOfSub(target.subBucket)], subBuckets: [target.subBucket], entries: [] });
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
