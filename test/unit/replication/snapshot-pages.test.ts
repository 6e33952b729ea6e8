import { describe, expect, it } from 'vitest';
import { InstanceStore } from '../../../src/registry/store.js';
import {
  SNAPSHOT_ORDER_TTL_MS,
  SNAPSHOT_ORDERS_MAX,
  SNAPSHOT_PAGE_MAX_RECORDS,
  SNAPSHOT_SORT_SLICE_ENTRIES,
  SnapshotPages,
} from '../../../src/replication/snapshot-pages.js';
import { FakeClock } from '../../support/fake-clock.js';
import { record } from '../../support/records.js';

const lease = { leaseExpiresAtMs: 5_000, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: 0 };
const BUCKETS = 64;

function filled(count: number): InstanceStore {
  const store = new InstanceStore(BUCKETS);
  for (let i = 0; i < count; i++) store.write(record({ service: `s-${i % 7}`, instanceId: `i-${i}` }), lease, 'local');
  return store;
}

const ids = (entries: { record: { service: string; instanceId: string } }[]) => entries.map((e) => `${e.record.service}/${e.record.instanceId}`);
const bucketOf = (entry: { subBucket: number }) => Math.floor(entry.subBucket / 16);

/** The answer of a call that may wait on the clock (a sort in slices), time moving until it comes. */
async function withTime<T>(clock: FakeClock, call: Promise<T>): Promise<T> {
  let done = false;
  const answer = call.finally(() => {
    done = true;
  });
  await clock.advanceUntil(() => done, 10_000, 1);
  return answer;
}

describe('SnapshotPages', () => {
  it('serves every stored instance exactly once over the pages, each page the instances of its buckets', async () => {
    const store = filled(1_000);
    const pages = new SnapshotPages(store, new FakeClock());
    const served: string[] = [];
    for (let from = 0; from < BUCKETS; from += 10) {
      const page = await pages.page('peer-b', from, Math.min(BUCKETS, from + 10));
      for (const entry of page.entries) expect(bucketOf(entry) >= from && bucketOf(entry) < from + 10).toBe(true);
      served.push(...ids(page.entries));
    }
    expect(served).toHaveLength(1_000);
    expect(new Set(served).size).toBe(1_000);
    // The last page ends the requester's order.
    expect(pages.requesters).toBe(0);
  });

  it('serves the current record of an instance written since the first page, and leaves out one purged since', async () => {
    const store = filled(200);
    const pages = new SnapshotPages(store, new FakeClock());
    await pages.page('peer-b', 0, 1);
    const all = [...store.entries()];
    const changed = all.find((entry) => bucketOf(entry) >= 1)!;
    const rewritten = store.write({ ...changed.record, version: `${changed.record.version}x`, deleted: 'cancel' }, lease, 'local');
    const purged = all.find((entry) => bucketOf(entry) >= 1 && entry !== changed)!;
    store.purge(purged.record);
    const rest = (await pages.page('peer-b', 1, BUCKETS)).entries;
    expect(rest).toContain(rewritten);
    expect(rest).not.toContain(changed);
    expect(ids(rest)).not.toContain(ids([purged])[0]);
  });

  it('sorts the store again for a requester that starts over, forgets a requester after its time, and keeps at most a few', async () => {
    const clock = new FakeClock();
    const store = filled(100);
    const pages = new SnapshotPages(store, clock);
    await pages.page('peer-b', 0, 1);
    store.write(record({ service: 'late', instanceId: 'late-1' }), lease, 'local');
    // Started over at bucket 0: the new instance is in this order.
    const again: string[] = [];
    for (let bucket = 0; bucket < BUCKETS; bucket++) again.push(...ids((await pages.page('peer-b', bucket, bucket + 1)).entries));
    expect(again).toContain('late/late-1');
    await pages.page('peer-c', 0, 1);
    clock.jump(SNAPSHOT_ORDER_TTL_MS + 1);
    await pages.page('peer-d', 0, 1);
    expect(pages.requesters).toBe(1);
    for (let k = 0; k < SNAPSHOT_ORDERS_MAX + 2; k++) await pages.page(`peer-${k}`, 0, 1);
    expect(pages.requesters).toBe(SNAPSHOT_ORDERS_MAX);
  });

  it('answers a page asked without a first one (a requester whose order was dropped) from a fresh order', async () => {
    const pages = new SnapshotPages(filled(300), new FakeClock());
    const page = (await pages.page('peer-b', 5, 9)).entries;
    expect(page.length).toBeGreaterThan(0);
    expect(page.every((entry) => bucketOf(entry) >= 5 && bucketOf(entry) < 9)).toBe(true);
  });

  it('ends a page at the first bucket boundary past its record budget, at least one bucket, and says where', async () => {
    const clock = new FakeClock();
    const store = filled(SNAPSHOT_PAGE_MAX_RECORDS * 3);
    const pages = new SnapshotPages(store, clock);
    let from = 0;
    let served = 0;
    let count = 0;
    while (from < BUCKETS) {
      const page = await withTime(clock, pages.page('peer-b', from, BUCKETS));
      expect(page.nextBucket).toBeGreaterThan(from);
      expect(page.entries.length).toBeLessThanOrEqual(SNAPSHOT_PAGE_MAX_RECORDS);
      served += page.entries.length;
      count += 1;
      from = page.nextBucket;
    }
    expect(served).toBe(SNAPSHOT_PAGE_MAX_RECORDS * 3);
    expect(count).toBeGreaterThanOrEqual(3);
    expect(await pages.page('peer-b', BUCKETS, BUCKETS + 5)).toEqual({ entries: [], nextBucket: BUCKETS });
  });

  it('sorts a store larger than a slice in slices, yielding through the clock between them, and still serves every instance once', async () => {
    const clock = new FakeClock();
    const count = SNAPSHOT_SORT_SLICE_ENTRIES * 2 + 10;
    const store = filled(count);
    const pages = new SnapshotPages(store, clock);
    let done = false;
    const pending = pages.page('peer-b', 0, BUCKETS).finally(() => {
      done = true;
    });
    await Promise.resolve();
    // The sort waits for the clock between its slices: nothing is answered until time moves.
    expect(done).toBe(false);
    // An instance written while the sort is under way is served too (the pass sees it).
    store.write(record({ service: 'during', instanceId: 'during-1' }), lease, 'local');
    const first = await withTime(clock, pending);
    const served = [...first.entries];
    let from = first.nextBucket;
    while (from < BUCKETS) {
      const page = await pages.page('peer-b', from, BUCKETS);
      served.push(...page.entries);
      from = page.nextBucket;
    }
    expect(new Set(ids(served)).size).toBe(count + 1);
    expect(served).toHaveLength(count + 1);
  });
});
