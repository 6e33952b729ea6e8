/** Items taken from an outbox, in line order, with when each was queued. */
export interface OutboxBatch<T> {
  items: T[];
  queuedAtMs: number[];
}

/** Room for this many items at first. */
const INITIAL_CAPACITY = 256;
/**
 * A line that grew past this (a backlog while the peer was down) goes back to the first room
 * once it empties; a smaller one keeps its arrays, so a line that fills and drains with every
 * batch allocates nothing.
 */
const SHRINK_ABOVE = 16_384;

/**
 * The pending writes for one peer, in arrival order, bounded. An item is what a write stored
 * (the channel queues stored entries, one per write). A key written again while queued has two
 * items in line; `take` skips the ones its `keep` refuses (superseded since), so the key goes
 * once, as last written. When full, the oldest item is dropped (and counted): the freshest
 * changes keep flowing and anti-entropy repairs the rest.
 *
 * A ring of two arrays, not a `Map`, so that nothing is allocated per write: each queued
 * write lives until its batch goes, and a long-lived map's table is reallocated in the old
 * generation every time it grows or shrinks, which a line filled and drained 50 times a second
 * does all the time: 175 B of old-space garbage per write, on the peer taking the writes,
 * once per peer it replicates to, against 0 B for this ring (issue 36; `node --expose-gc
 * --max-semi-space-size=8 --initial-old-space-size=4000 --import tsx bench/old-space-garbage.ts`).
 */
export class Outbox<T extends object> {
  private items: (T | undefined)[] = new Array<T | undefined>(INITIAL_CAPACITY).fill(undefined);
  private times = new Float64Array(INITIAL_CAPACITY);
  private head = 0;
  private count = 0;
  dropped = 0;

  constructor(private readonly maxItems: number) {}

  /** Items in line, superseded ones included until `take` passes them. */
  get size(): number {
    return this.count;
  }

  /** Adds an item at the back of the line. */
  add(item: T, queuedAtMs: number): void {
    if (this.count === this.maxItems) {
      this.removeFront();
      this.dropped += 1;
    }
    if (this.count === this.items.length) this.resize(Math.min(this.items.length * 2, this.maxItems));
    const at = (this.head + this.count) % this.items.length;
    this.items[at] = item;
    this.times[at] = queuedAtMs;
    this.count += 1;
  }

  /** Takes up to `count` items from the front of the line, passing over those `keep` refuses. */
  take(count: number, keep: (item: T) => boolean): OutboxBatch<T> {
    const batch: OutboxBatch<T> = { items: [], queuedAtMs: [] };
    while (this.count > 0 && batch.items.length < count) {
      const queuedAtMs = this.times[this.head]!;
      const item = this.removeFront();
      if (!keep(item)) continue;
      batch.items.push(item);
      batch.queuedAtMs.push(queuedAtMs);
    }
    if (this.count === 0 && this.items.length > SHRINK_ABOVE) this.resize(INITIAL_CAPACITY);
    return batch;
  }

  /** Puts back the items of a batch that failed, at the back of the line with their queue times, except those `keep` refuses. */
  restore(batch: OutboxBatch<T>, keep: (item: T) => boolean): void {
    batch.items.forEach((item, i) => {
      if (keep(item)) this.add(item, batch.queuedAtMs[i]!);
    });
  }

  /** How long the oldest pending write has waited. */
  oldestAgeMs(nowMs: number): number {
    return this.count === 0 ? 0 : nowMs - this.times[this.head]!;
  }

  private removeFront(): T {
    const item = this.items[this.head]!;
    this.items[this.head] = undefined;
    this.head = (this.head + 1) % this.items.length;
    this.count -= 1;
    return item;
  }

  /** New arrays of `capacity`, the line copied to their front (capacity is never below the count). */
  private resize(capacity: number): void {
    const items = new Array<T | undefined>(capacity).fill(undefined);
    const times = new Float64Array(capacity);
    for (let i = 0; i < this.count; i++) {
      const from = (this.head + i) % this.items.length;
      items[i] = this.items[from];
      times[i] = this.times[from]!;
    }
    this.items = items;
    this.times = times;
    this.head = 0;
  }
}
