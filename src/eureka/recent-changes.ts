import type { Clock, TimerHandle } from '../clock/clock.js';
import type { StoreReader } from '../app/reads.js';
import type { StoreChange } from '../registry/store.js';
import { instanceKeyString, type InstanceRecord, type StoredInstance } from '../registry/types.js';
import { isServed, type LeaseView } from '../registry/visibility.js';
import type { ActionType } from './instance-view.js';

/** The last change of one instance within the window. */
export interface RecentChange {
  atMs: number;
  /** The record as it was right after the change (a deleted one keeps its last data). */
  record: InstanceRecord;
  action: ActionType;
}

export interface RecentChangesComponents {
  clock: Clock;
  store: StoreReader;
  leaseView: () => LeaseView;
}

export interface RecentChangesInit {
  /** How far back a delta reaches (`cluster.eurekaDeltaWindowMs`). */
  windowMs: number;
  /** Only this namespace's changes are kept (the one the Eureka API serves, `security.eurekaNamespace`). */
  namespace: string;
}

/**
 * The window `GET /eureka/apps/delta` answers from: the last change of every instance that
 * changed within `windowMs`, fed by the store's change feed, so replicated writes and local
 * visibility changes (an owner down, a lease revived) count as much as writes made here.
 * One entry per instance (a newer change replaces the older), kept in time order, so memory
 * is bounded by the number of instances that changed in the window and pruning is O(1) each
 * (amortised; done in pieces of at most `PRUNE_SLICE_ENTRIES`).
 *
 * Entries are keyed by the record they hold, not by a key string: every change names the
 * record it replaces (`before`, the record itself for a local change), so the older entry is
 * found without building a `namespace/service/instanceId` string per instance (right after
 * 100,000 registrations the window holds 100,000 entries; such strings cost about 9 MB).
 * The one way to lose that link is a purge (an expired tombstone, and the next register of
 * the same instance then names no `before`): purged records still in the window are indexed
 * by key string in `purgedInWindow`, which is empty unless tombstones expire within the window.
 */
/** The actions, by their code in a packed change (`atMs * ACTION_CODES + code`). */
const ACTIONS: readonly ActionType[] = ['ADDED', 'MODIFIED', 'DELETED'];
const ACTION_CODES = 4;

/**
 * Most entries one prune drops before it lets the caller go on (a change, a read of the
 * window). A million registrations in one window leave a million entries that fall out of it
 * together; dropped in one piece, that is one turn of the event loop proportional to the
 * registry, which every heartbeat arriving meanwhile waits for. What is left is dropped in later pieces, one per change and one per turn of the
 * clock's timers (`setTimeout(0)`) until the window is clean; reads skip what is out of the
 * window meanwhile, so nothing they see changes.
 */
export const PRUNE_SLICE_ENTRIES = 1_000;

export class RecentChanges {
  /**
   * Record to its change packed in one number, `atMs * ACTION_CODES + action code` (exact: far
   * below 2^53 for any clock reading), so that an entry costs one boxed number rather than an
   * object plus one (48 bytes less per instance); `changes()` builds the objects when asked.
   */
  private readonly byRecord = new Map<InstanceRecord, number>();
  /** Key string to record, for records purged from the store while their entry is in the window. */
  private readonly purgedInWindow = new Map<string, InstanceRecord>();
  private unsubscribe: (() => void)[] = [];
  /** The next piece of a prune that stopped at `PRUNE_SLICE_ENTRIES`, while one is due. */
  private pruneLater: TimerHandle | undefined;

  constructor(
    private readonly components: RecentChangesComponents,
    private readonly init: RecentChangesInit,
  ) {}

  start(): void {
    if (this.unsubscribe.length > 0) return;
    const { store } = this.components;
    this.unsubscribe = [store.onChange((change) => this.record(change)), store.onPurge((purged) => this.purged(purged))];
  }

  stop(): void {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    this.unsubscribe = [];
    this.pruneLater?.cancel();
    this.pruneLater = undefined;
  }

  /** Every change still in the window, oldest first. */
  changes(): RecentChange[] {
    return [...this.entries()];
  }

  /**
   * Every change in the window, oldest first, one at a time, so that a reader may stop between
   * two and yield to the event loop (the delta document is built so). The window is the one of
   * the call: entries older than it are skipped, whatever the prune has dropped yet. A change
   * made while a reader is suspended moves its instance to the end: a reader that has passed
   * it then meets the instance a second time, later in time order (docs/eureka.md). A reader
   * meets at most twice the entries held when it started, so that writes arriving faster than
   * it reads cannot keep it going forever; what it leaves is in the next read.
   */
  *entries(): Generator<RecentChange> {
    const nowMs = this.components.clock.nowMs();
    const oldestMs = nowMs - this.init.windowMs;
    this.prune(nowMs);
    let left = 2 * this.byRecord.size;
    for (const [record, packed] of this.byRecord) {
      if (left-- === 0) return;
      const atMs = Math.floor(packed / ACTION_CODES);
      if (atMs <= oldestMs) continue;
      yield { atMs, record, action: ACTIONS[packed % ACTION_CODES]! };
    }
  }

  /** Entries held, those out of the window not yet pruned included. */
  get size(): number {
    return this.byRecord.size;
  }

  private record(change: StoreChange): void {
    const { entry } = change;
    if (entry.record.namespace !== this.init.namespace) return;
    const visibleNow = isServed(entry, this.components.leaseView());
    // A write replaces the record: it was visible if it existed undeleted. A local change is
    // announced only when visibility flipped.
    const visibleBefore =
      change.kind === 'write' ? change.before !== null && change.before.deleted === null : !visibleNow;
    const action: ActionType = !visibleNow ? 'DELETED' : visibleBefore ? 'MODIFIED' : 'ADDED';
    const nowMs = this.components.clock.nowMs();
    // Delete first so that the entry moves to the end: the map stays in time order.
    if (change.before !== null) this.byRecord.delete(change.before);
    else if (this.purgedInWindow.size > 0) this.forgetPurged(instanceKeyString(entry.record));
    this.byRecord.set(entry.record, nowMs * ACTION_CODES + ACTIONS.indexOf(action));
    this.prune(nowMs);
  }

  private purged(purged: StoredInstance): void {
    if (this.byRecord.has(purged.record)) this.purgedInWindow.set(instanceKeyString(purged.record), purged.record);
  }

  private forgetPurged(key: string): void {
    const record = this.purgedInWindow.get(key);
    if (record === undefined) return;
    this.purgedInWindow.delete(key);
    this.byRecord.delete(record);
  }

  /**
   * Drops at most `PRUNE_SLICE_ENTRIES` entries out of the window; when more are left, the next
   * piece runs on the clock's next timer turn (one at a time).
   */
  private prune(nowMs: number): void {
    const oldestMs = nowMs - this.init.windowMs;
    let dropped = 0;
    for (const [record, packed] of this.byRecord) {
      if (Math.floor(packed / ACTION_CODES) > oldestMs) break;
      if (dropped === PRUNE_SLICE_ENTRIES) {
        this.prunePending();
        return;
      }
      dropped += 1;
      this.byRecord.delete(record);
      if (this.purgedInWindow.size > 0 && record.deleted !== null) {
        const key = instanceKeyString(record);
        if (this.purgedInWindow.get(key) === record) this.purgedInWindow.delete(key);
      }
    }
  }

  private prunePending(): void {
    if (this.pruneLater !== undefined || this.unsubscribe.length === 0) return;
    const { clock } = this.components;
    this.pruneLater = clock.setTimeout(() => {
      this.pruneLater = undefined;
      this.prune(clock.nowMs());
    }, 0);
  }
}
