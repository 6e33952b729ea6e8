import type { Clock } from '../clock/clock.js';
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
 * is bounded by the number of instances that changed in the window and pruning is O(1) each.
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
  }

  /** Every change still in the window, oldest first. */
  changes(): RecentChange[] {
    this.prune(this.components.clock.nowMs());
    const out: RecentChange[] = [];
    for (const [record, packed] of this.byRecord) {
      out.push({ atMs: Math.floor(packed / ACTION_CODES), record, action: ACTIONS[packed % ACTION_CODES]! });
    }
    return out;
  }

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

  private prune(nowMs: number): void {
    const oldestMs = nowMs - this.init.windowMs;
    for (const [record, packed] of this.byRecord) {
      if (Math.floor(packed / ACTION_CODES) > oldestMs) break;
      this.byRecord.delete(record);
      if (this.purgedInWindow.size > 0 && record.deleted !== null) {
        const key = instanceKeyString(record);
        if (this.purgedInWindow.get(key) === record) this.purgedInWindow.delete(key);
      }
    }
  }
}
