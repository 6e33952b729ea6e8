import { sleep, type Clock } from '../clock/clock.js';
import type { InstanceStore } from '../registry/store.js';
import { bucketOfSub } from '../registry/digest.js';
import type { StoredInstance } from '../registry/types.js';

/** How long a requester's bucket order is kept after its last page (a sync that stalls longer starts over). */
export const SNAPSHOT_ORDER_TTL_MS = 60_000;
/**
 * Most records one page carries (a page ends at the first bucket boundary past it): what one
 * answer costs the serving peer's event loop (building and encoding the records) and the
 * requester's (applying them), whatever span of buckets was asked for. At 1,000,000 instances
 * a snapshot is about 120 such pages; at 100,000 the requester's 16 pages are under it.
 */
export const SNAPSHOT_PAGE_MAX_RECORDS = 8_000;
/**
 * Stored instances collected between two yields to the event loop while a bucket order is built:
 * at 1,000,000 instances a pass over the store holds the loop for about 100 ms in one piece,
 * in slices of this many a few milliseconds each. A store of at most this many is sorted at once.
 */
export const SNAPSHOT_SORT_SLICE_ENTRIES = 20_000;
/** Requesters whose bucket order is kept at once; past it the oldest is dropped. */
export const SNAPSHOT_ORDERS_MAX = 4;

interface BucketOrder {
  /** Every stored instance when the requester asked for its first page, by bucket. */
  entries: StoredInstance[];
  /** `entries` of bucket b are `entries[starts[b]]` to `entries[starts[b + 1] - 1]`. */
  starts: Int32Array;
  lastUsedMs: number;
}

/**
 * The serving side of the start-up snapshot: the instances of a range of digest buckets, page
 * after page. Picking a page's instances out of the store is a pass over the whole store, so
 * 120 pages of a registry of 1,000,000 would be 120 such passes; instead the first page of a
 * requester sorts the store by bucket once (one pass, yielding between slices of
 * `SNAPSHOT_SORT_SLICE_ENTRIES`, then a counting sort; an array of references that lives until
 * its last page), and each later page is a slice of it. Each instance of a
 * slice is read again from the store: a page carries the current record, and an instance
 * removed since is left out. Instances added since the first page may be missing from later
 * pages; the anti-entropy round that ends every start-up sync brings them.
 */
export class SnapshotPages {
  private readonly orders = new Map<string, BucketOrder>();

  constructor(
    private readonly store: InstanceStore,
    private readonly clock: Clock,
  ) {}

  /**
   * The stored instances of buckets `fromBucket` to `endBucket - 1` for `requester`, or of
   * fewer buckets where those hold more than `SNAPSHOT_PAGE_MAX_RECORDS` (at least one bucket):
   * `nextBucket` says where the page ended.
   */
  async page(requester: string, fromBucket: number, endBucket: number): Promise<{ entries: StoredInstance[]; nextBucket: number }> {
    this.forgetStale(this.clock.nowMs());
    const bucketCount = this.store.digest.bucketCount;
    if (fromBucket >= bucketCount) return { entries: [], nextBucket: bucketCount };
    let order = this.orders.get(requester);
    if (order === undefined || fromBucket === 0) {
      order = await this.sortByBucket();
      this.orders.delete(requester);
      this.orders.set(requester, order);
      while (this.orders.size > SNAPSHOT_ORDERS_MAX) this.orders.delete(this.orders.keys().next().value!);
    }
    order.lastUsedMs = this.clock.nowMs();
    const { entries, starts } = order;
    let end = fromBucket + 1;
    while (end < endBucket && starts[end + 1]! - starts[fromBucket]! <= SNAPSHOT_PAGE_MAX_RECORDS) end += 1;
    const out: StoredInstance[] = [];
    for (let i = starts[fromBucket]!; i < starts[end]!; i++) {
      const current = this.store.get(entries[i]!.record);
      if (current !== undefined) out.push(current);
    }
    if (end >= bucketCount) this.orders.delete(requester);
    return { entries: out, nextBucket: end };
  }

  /** Requesters with a bucket order kept (for tests). */
  get requesters(): number {
    return this.orders.size;
  }

  private async sortByBucket(): Promise<BucketOrder> {
    const { bucketCount } = this.store.digest;
    // One pass collecting every entry and its bucket, in slices: the store may change between
    // them (a Map iterator sees what is added meanwhile, not what is deleted), which the pages
    // absorb by reading every entry again.
    const collected: StoredInstance[] = [];
    const bucketOf: number[] = [];
    const slicing = this.store.size > SNAPSHOT_SORT_SLICE_ENTRIES;
    for (const entry of this.store.entries()) {
      collected.push(entry);
      bucketOf.push(bucketOfSub(entry.subBucket));
      if (slicing && collected.length % SNAPSHOT_SORT_SLICE_ENTRIES === 0) await sleep(this.clock, 0);
    }
    const starts = new Int32Array(bucketCount + 1);
    for (const bucket of bucketOf) starts[bucket + 1]! += 1;
    for (let bucket = 0; bucket < bucketCount; bucket++) starts[bucket + 1]! += starts[bucket]!;
    const next = starts.slice(0, bucketCount);
    const entries = new Array<StoredInstance>(collected.length);
    for (let i = 0; i < collected.length; i++) entries[next[bucketOf[i]!]!++] = collected[i]!;
    return { entries, starts, lastUsedMs: this.clock.nowMs() };
  }

  private forgetStale(nowMs: number): void {
    for (const [requester, order] of this.orders) {
      if (nowMs - order.lastUsedMs > SNAPSHOT_ORDER_TTL_MS) this.orders.delete(requester);
    }
  }
}
