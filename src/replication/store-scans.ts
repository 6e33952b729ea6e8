import type { InstanceStore } from '../registry/store.js';
import { StoreWalk } from '../registry/store-walk.js';
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
    // The walk's step is a plain method, not a loop inside this async function, which V8
    // optimised less well. At 1,000,000 records a pass costs 49-85 ms against 26-39 ms for the
    // same scan as one inline loop (`npx tsx bench/registry-passes.ts --passes=1`, 2026-12-07,
    // the machine shared with a CI run).
    const walk = new StoreWalk(this.store.allServices());
    const visit = (entry: StoredInstance) => {
      for (let j = 0; j < jobs.length; j++) if (jobs[j]!.wanted[entry.subBucket] === 1) jobs[j]!.take(entry);
    };
    while (!walk.step(RECONCILE_SCAN_SLICE_RECORDS, visit)) await this.yieldTurn();
  }
}
