import { describe, expect, it, vi } from 'vitest';
import { sleep } from '../../../src/clock/clock.js';
import { TurnQueue } from '../../../src/clock/turn-queue.js';
import { SUB_BUCKETS } from '../../../src/registry/digest.js';
import type { StoredInstance } from '../../../src/registry/types.js';
import { RECONCILE_SCAN_SLICE_RECORDS, StoreScans } from '../../../src/replication/store-scans.js';
import { RoundListings } from '../../../src/replication/round-listings.js';
import { encodeRoundSubBuckets, wantedSubBuckets } from '../../../src/replication/reconcile-parts.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';

/** A node of `count` instances, with the scans over its store counted. */
async function scanned(count: number) {
  // Not started: no timer of its own (the reaper's) passes over the store meanwhile.
  const { clock, node } = await createTestNode({ start: false });
  for (let i = 0; i < count; i++) node.registry.register(instance(`i-${i}`, { service: `svc-${i % 7}` }));
  const all = [...node.store.entries()];
  const passes = vi.spyOn(node.store, 'allServices');
  const scans = new StoreScans(node.store, () => sleep(clock, 0));
  const bucketCount = node.store.digest.bucketCount;
  const inSubs = (subs: Iterable<number>) => {
    const set = new Set(subs);
    return all.filter((entry) => set.has(entry.subBucket)).map(idOf).sort();
  };
  return { clock, node, all, passes, scans, bucketCount, inSubs };
}
const idOf = (entry: StoredInstance) => entry.record.instanceId;
const subsOf = (bucket: number) => Array.from({ length: SUB_BUCKETS }, (_, n) => bucket * SUB_BUCKETS + n);

describe('StoreScans', () => {
  it('serves every find asked before a pass begins with that one pass, each with its own sub-buckets', async () => {
    const { clock, node, passes, scans, bucketCount, inSubs } = await scanned(RECONCILE_SCAN_SLICE_RECORDS + 10);
    try {
      const one: StoredInstance[] = [];
      const two: StoredInstance[] = [];
      const late: StoredInstance[] = [];
      const first = scans.find(wantedSubBuckets(bucketCount, new Set([0, 1])), (entry) => one.push(entry));
      const second = scans.find(wantedSubBuckets(bucketCount, new Set([1, 2])), (entry) => two.push(entry));
      await clock.advance(0);
      // Asked once that pass has begun (it is suspended between two slices): a pass of its own.
      const third = scans.find(wantedSubBuckets(bucketCount, new Set([3])), (entry) => late.push(entry));
      await clock.advance(0);
      await Promise.all([first, second, third]);
      expect(passes).toHaveBeenCalledTimes(2);
      expect(one.map(idOf).sort()).toEqual(inSubs([...subsOf(0), ...subsOf(1)]));
      expect(two.map(idOf).sort()).toEqual(inSubs([...subsOf(1), ...subsOf(2)]));
      expect(late.map(idOf).sort()).toEqual(inSubs(subsOf(3)));
      expect(one.length).toBeGreaterThan(0);
    } finally {
      await node.stop();
    }
  });
});

describe('RoundListings', () => {
  const KEEP_MS = 5_000;

  it("answers a round's parts from one pass, and makes a new one for a new round", async () => {
    const { clock, node, passes, scans, bucketCount, inSubs } = await scanned(3_000);
    try {
      const listings = new RoundListings({ clock, scans, bucketCount: () => bucketCount }, KEEP_MS);
      const ask = async (from: string, buckets: number[], subBuckets?: number[], round?: number[]) => {
        const asked = listings.entriesIn(from, buckets, subBuckets, round && encodeRoundSubBuckets(buckets, round));
        await clock.advance(0);
        return (await asked).map(idOf).sort();
      };
      const buckets = [5, 6, 7];
      const [a, b] = [subsOf(5).slice(0, 8), [...subsOf(5).slice(8), ...subsOf(7)]];
      const round = [...a, ...b];
      expect(await ask('peer-a', buckets, a, round)).toEqual(inSubs(a));
      expect(await ask('peer-a', buckets, b, round)).toEqual(inSubs(b));
      expect(passes).toHaveBeenCalledTimes(1);

      // A sub-bucket asked again is a new round's; so are other buckets, and another caller's.
      expect(await ask('peer-a', buckets, a, round)).toEqual(inSubs(a));
      expect(passes).toHaveBeenCalledTimes(2);
      expect(await ask('peer-a', [8], subsOf(8), subsOf(8))).toEqual(inSubs(subsOf(8)));
      expect(passes).toHaveBeenCalledTimes(3);
      expect(await ask('peer-b', buckets)).toEqual(inSubs([...subsOf(5), ...subsOf(6), ...subsOf(7)]));
      expect(passes).toHaveBeenCalledTimes(4);

      // Without the round's sub-buckets (an older caller), each call lists its own alone.
      expect(await ask('peer-d', buckets, a)).toEqual(inSubs(a));
      expect(await ask('peer-d', buckets, b)).toEqual(inSubs(b));
      expect(passes).toHaveBeenCalledTimes(6);

      // Kept for keepMs, no longer.
      const kept = subsOf(9);
      expect(await ask('peer-c', [9, 10], kept.slice(0, 4), kept)).toEqual(inSubs(kept.slice(0, 4)));
      await clock.advance(KEEP_MS);
      expect(await ask('peer-c', [9, 10], kept.slice(4), kept)).toEqual(inSubs(kept.slice(4)));
      expect(passes).toHaveBeenCalledTimes(8);
    } finally {
      await node.stop();
    }
  });

  it("keeps two rounds of one caller side by side (a round beside a stuck one): their parts interleave on one pass each", async () => {
    const { clock, node, passes, scans, bucketCount, inSubs } = await scanned(3_000);
    try {
      const listings = new RoundListings({ clock, scans, bucketCount: () => bucketCount }, KEEP_MS);
      const ask = async (buckets: number[], subBuckets: number[], round: number[]) => {
        const asked = listings.entriesIn('peer-a', buckets, subBuckets, encodeRoundSubBuckets(buckets, round));
        await clock.advance(0);
        return (await asked).map(idOf).sort();
      };
      const first = { buckets: [5, 6], round: [...subsOf(5), ...subsOf(6)] };
      const second = { buckets: [6, 7], round: [...subsOf(6), ...subsOf(7)] };
      const third = { buckets: [8], round: subsOf(8) };
      const half = (round: number[], n: 0 | 1) => round.slice(n * (round.length / 2), (n + 1) * (round.length / 2));
      expect(await ask(first.buckets, half(first.round, 0), first.round)).toEqual(inSubs(half(first.round, 0)));
      expect(await ask(second.buckets, half(second.round, 0), second.round)).toEqual(inSubs(half(second.round, 0)));
      expect(await ask(first.buckets, half(first.round, 1), first.round)).toEqual(inSubs(half(first.round, 1)));
      expect(await ask(second.buckets, half(second.round, 1), second.round)).toEqual(inSubs(half(second.round, 1)));
      expect(passes).toHaveBeenCalledTimes(2);

      // A third round drops the oldest listing: the first round's rest is listed again.
      expect(await ask(third.buckets, third.round.slice(0, 4), third.round)).toEqual(inSubs(third.round.slice(0, 4)));
      expect(passes).toHaveBeenCalledTimes(3);
      const rest = [...subsOf(5)].slice(0, 2);
      expect(await ask(first.buckets, rest, first.round)).toEqual(inSubs(rest));
      expect(passes).toHaveBeenCalledTimes(4);
      // The third's listing stayed (the second's went with the first's new one): its rest needs no pass.
      expect(await ask(third.buckets, third.round.slice(4), third.round)).toEqual(inSubs(third.round.slice(4)));
      expect(passes).toHaveBeenCalledTimes(4);
    } finally {
      await node.stop();
    }
  });

  it('gives the same sub-buckets asked twice at once to both, and answers sub-buckets outside the round on their own', async () => {
    const { clock, node, all, passes, scans, bucketCount, inSubs } = await scanned(3_000);
    try {
      const listings = new RoundListings({ clock, scans, bucketCount: () => bucketCount }, KEEP_MS);
      // Two buckets that hold records.
      const [held, other] = [...new Set(all.map((entry) => Math.floor(entry.subBucket / SUB_BUCKETS)))];
      const buckets = [held!, other!];
      const round = encodeRoundSubBuckets(buckets, subsOf(held!));
      const asked = subsOf(held!);
      const twice = [listings.entriesIn('peer-a', buckets, asked, round), listings.entriesIn('peer-a', buckets, asked, round)];
      await clock.advance(0);
      const [one, two] = (await Promise.all(twice)).map((entries) => entries.map(idOf).sort());
      expect(one).toEqual(inSubs(asked));
      expect(two).toEqual(one);
      expect(one!.length).toBeGreaterThan(0);

      // Sub-buckets of the other bucket are not in this round: answered from a pass of their own.
      const outside = listings.entriesIn('peer-a', buckets, subsOf(other!), round);
      await clock.advance(0);
      const found = (await outside).map(idOf).sort();
      expect(found).toEqual(inSubs(subsOf(other!)));
      expect(found.length).toBeGreaterThan(0);
      // The second asker's listing was asked for before the first's pass began: one pass served both.
      expect(passes).toHaveBeenCalledTimes(2);
    } finally {
      await node.stop();
    }
  });

  it('answers the entry its pass found for the round, though the record was replaced since (the reconcile answer reads the store again)', async () => {
    const { clock, node, scans, bucketCount } = await scanned(2_000);
    try {
      const listings = new RoundListings({ clock, scans, bucketCount: () => bucketCount }, KEEP_MS);
      const target = [...node.store.entries()][0]!;
      const bucket = Math.floor(target.subBucket / SUB_BUCKETS);
      const others = subsOf(bucket).filter((sub) => sub !== target.subBucket);
      const round = encodeRoundSubBuckets([bucket], subsOf(bucket));
      const first = listings.entriesIn('peer-a', [bucket], others, round);
      await clock.advance(0);
      await first;
      node.registry.update(instance(target.record.instanceId, { service: target.record.service }), { status: 'DOWN' });
      const second = listings.entriesIn('peer-a', [bucket], [target.subBucket], round);
      await clock.advance(0);
      // The stored entry the pass found: anti-entropy's answer reads the store again for it.
      expect(await second).toContain(target);
    } finally {
      await node.stop();
    }
  });
});

describe('TurnQueue', () => {
  it("gives each task's step a turn of its own, in the order they asked", async () => {
    const turns: Array<() => void> = [];
    const queue = new TurnQueue(() => new Promise<void>((resolve) => turns.push(resolve)));
    const ran: string[] = [];
    const task = async (name: string) => {
      for (let step = 0; step < 2; step++) {
        await queue.next();
        ran.push(`${name}${step}`);
      }
    };
    const done = Promise.all([task('a'), task('b')]);
    for (let turn = 0; turn < 4; turn++) {
      const before = ran.length;
      while (turns.length === 0) await Promise.resolve();
      turns.shift()!();
      while (ran.length === before) await Promise.resolve();
      expect(ran.length).toBe(before + 1);
    }
    await done;
    expect(ran).toEqual(['a0', 'b0', 'a1', 'b1']);
  });
});
