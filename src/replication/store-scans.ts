import type { InstanceStore, ServiceEntries } from '../registry/store.js';
import type { StoredInstance } from '../registry/types.js';

/**
 * Stored records a scan reads between two yields to the event loop. Finding the records of
 * some sub-buckets is one pass over the whole store: at 1,000,000 records, in one piece, a
 * reconcile held a heartbeat up to 736 ms, in slices 188 ms (bench/loop-stalls.ts, one outlier
 * each, shared 2-core box under load).
 */
export const RECONCILE_SCAN_SLICE_RECORDS = 20_000;

/** One reader of a pass: the sub-buckets it wants (1: wanted), and where their records go. */
interface ScanJob {
  wanted: Uint8Array;
  take(entry: StoredInstance): void;
}

/**
 * Passes over the whole store that find the records of some sub-buckets, in slices of
 * `RECONCILE_SCAN_SLICE_RECORDS`, shared: every read asked before a pass begins (it begins a
 * turn after the first is asked) is served by that one pass. A round's reconcile parts arrive
 * together (`RECONCILE_PARTS_IN_FLIGHT`), so the peer answering them reads its store once for
 * several parts, not once per part.
 *
 * The store may change while a pass is suspended: a record replaced meanwhile is handed as
 * stored when the pass reaches it, one added behind the pass is missed, one purged before it
 * is left out. Anti-entropy compares again in its next round.
 */
export class StoreScans {
  private next: { jobs: ScanJob[]; done: Promise<void> } | undefined;

  constructor(
    private readonly store: InstanceStore,
    private readonly yieldTurn: () => Promise<void>,
  ) {}

  /** Resolves once a pass has handed `take` every record of the `wanted` sub-buckets. */
  find(wanted: Uint8Array, take: (entry: StoredInstance) => void): Promise<void> {
    const job = { wanted, take };
    if (this.next !== undefined) {
      this.next.jobs.push(job);
      return this.next.done;
    }
    const jobs = [job];
    const done = this.pass(jobs);
    this.next = { jobs, done };
    return done;
  }

  private async pass(jobs: ScanJob[]): Promise<void> {
    await this.yieldTurn();
    this.next = undefined;
    const cursor: Cursor = { services: this.store.allServices(), instances: undefined };
    while (scanSlice(cursor, jobs, RECONCILE_SCAN_SLICE_RECORDS)) await this.yieldTurn();
  }
}

/** Where a pass stands: the services still to read, and the instances of the one being read. */
interface Cursor {
  services: Iterator<ServiceEntries>;
  instances: IterableIterator<StoredInstance> | undefined;
}

/**
 * Hands `jobs` the wanted records among the next `max` stored records; false once the store
 * is read through. A plain function rather than the loop inside the async pass: V8 optimises
 * it as such, about twice as fast at 1,000,000 records (.scratch measure, 2026-12-07: 80-127 ms
 * a pass inside the async function, against 37-54 ms for a plain loop).
 */
function scanSlice(cursor: Cursor, jobs: readonly ScanJob[], max: number): boolean {
  let left = max;
  for (;;) {
    if (cursor.instances === undefined) {
      const service = cursor.services.next();
      if (service.done === true) return false;
      cursor.instances = service.value.instances.values();
    }
    // A Map's iterator has no `return`: leaving the loop early leaves it where it stood.
    for (const entry of cursor.instances) {
      const sub = entry.subBucket;
      for (let j = 0; j < jobs.length; j++) if (jobs[j]!.wanted[sub] === 1) jobs[j]!.take(entry);
      if (--left === 0) return true;
    }
    cursor.instances = undefined;
  }
}
