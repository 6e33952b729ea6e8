import { describe, expect, it } from 'vitest';
import { InstanceStore } from '../../../src/registry/store.js';
import { SNAPSHOT_ORDER_TTL_MS, SNAPSHOT_PAGE_MAX_RECORDS, SNAPSHOT_ORDERS_MAX, SnapshotPages } from '../../../src/replication/snapshot-pages.js';
import { record } from '../../support/records.js';

const lease = { leaseExpiresAtMs: 5_000, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: 0 };
const BUCKETS = 64;

function filled(count: number): InstanceStore {
  const store = new InstanceStore(BUCKETS);
  for (let i = 0; i < count; i++) store.write(record({ service: `s-${i % 7}`, instanceId: `i-${i}` }), lease, 'local');
  return store;
}

const ids = (entries: { record: { service: string; instanceId: string } }[]) => entries.map((e) => `${e.record.service}/${e.record.instanceId}`);

describe('SnapshotPages', () => {
  it('serves every stored instance exactly once over the pages, each page the instances of its buckets', () => {
    const store = filled(1_000);
    const pages = new SnapshotPages(store);
    const served: string[] = [];
    for (let from = 0; from < BUCKETS; from += 10) {
      const page = pages.page('peer-b', from, Math.min(BUCKETS, from + 10), 0).entries;
      for (const entry of page) {
        const bucket = Math.floor(entry.subBucket / 16);
        expect(bucket >= from && bucket < from + 10).toBe(true);
      }
      served.push(...ids(page));
    }
    expect(served).toHaveLength(1_000);
    expect(new Set(served).size).toBe(1_000);
    // The last page ends the requester's order.
    expect(pages.requesters).toBe(0);
  });

  it('serves the current record of an instance written since the first page, and leaves out one purged since', () => {
    const store = filled(200);
    const pages = new SnapshotPages(store);
    pages.page('peer-b', 0, 1, 0);
    const all = [...store.entries()];
    const changed = all.find((entry) => Math.floor(entry.subBucket / 16) >= 1)!;
    const rewritten = store.write({ ...changed.record, version: `${changed.record.version}x`, deleted: 'cancel' }, lease, 'local');
    const purged = all.find((entry) => Math.floor(entry.subBucket / 16) >= 1 && entry !== changed)!;
    store.purge(purged.record);
    const rest = pages.page('peer-b', 1, BUCKETS, 0).entries;
    expect(rest).toContain(rewritten);
    expect(rest).not.toContain(changed);
    expect(ids(rest)).not.toContain(ids([purged])[0]);
  });

  it('sorts the store again for a requester that starts over, forgets a requester after its time, and keeps at most a few', () => {
    const store = filled(100);
    const pages = new SnapshotPages(store);
    pages.page('peer-b', 0, 1, 0);
    store.write(record({ service: 'late', instanceId: 'late-1' }), lease, 'local');
    // Started over at bucket 0: the new instance is in this order.
    const again = [...Array.from({ length: BUCKETS }, (_, b) => pages.page('peer-b', b, b + 1, 1_000).entries).flat()];
    expect(ids(again)).toContain('late/late-1');
    pages.page('peer-c', 0, 1, 0);
    pages.page('peer-d', 0, 1, SNAPSHOT_ORDER_TTL_MS + 1);
    expect(pages.requesters).toBe(1);
    for (let k = 0; k < SNAPSHOT_ORDERS_MAX + 2; k++) pages.page(`peer-${k}`, 0, 1, SNAPSHOT_ORDER_TTL_MS + 2);
    expect(pages.requesters).toBe(SNAPSHOT_ORDERS_MAX);
  });

  it('answers a page asked without a first one (a requester whose order was dropped) from a fresh order', () => {
    const store = filled(300);
    const pages = new SnapshotPages(store);
    const page = pages.page('peer-b', 5, 9, 0).entries;
    expect(page.length).toBeGreaterThan(0);
    expect(page.every((entry) => Math.floor(entry.subBucket / 16) >= 5 && Math.floor(entry.subBucket / 16) < 9)).toBe(true);
  });

  it('ends a page at the first bucket boundary past its record budget, at least one bucket, and says where', () => {
    const store = filled(SNAPSHOT_PAGE_MAX_RECORDS * 3);
    const pages = new SnapshotPages(store);
    let from = 0;
    let served = 0;
    let count = 0;
    while (from < BUCKETS) {
      const page = pages.page('peer-b', from, BUCKETS, 0);
      expect(page.nextBucket).toBeGreaterThan(from);
      expect(page.entries.length).toBeLessThanOrEqual(SNAPSHOT_PAGE_MAX_RECORDS);
      served += page.entries.length;
      count += 1;
      from = page.nextBucket;
    }
    expect(served).toBe(SNAPSHOT_PAGE_MAX_RECORDS * 3);
    expect(count).toBeGreaterThanOrEqual(3);
    expect(pages.page('peer-b', BUCKETS, BUCKETS + 5, 0)).toEqual({ entries: [], nextBucket: BUCKETS });
  });
});
