import type { Clock } from '../../clock/clock.js';
import type { InstanceStore, StoreChange } from '../../registry/store.js';
import { instanceKeyString, type InstanceRecord } from '../../registry/types.js';
import { isServed, type LeaseView } from '../../registry/visibility.js';
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
  store: InstanceStore;
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
 */
export class RecentChanges {
  private readonly byKey = new Map<string, RecentChange>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly components: RecentChangesComponents,
    private readonly init: RecentChangesInit,
  ) {}

  start(): void {
    this.unsubscribe ??= this.components.store.onChange((change) => this.record(change));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Every change still in the window, oldest first. */
  changes(): RecentChange[] {
    this.prune(this.components.clock.nowMs());
    return [...this.byKey.values()];
  }

  get size(): number {
    return this.byKey.size;
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
    const key = instanceKeyString(entry.record);
    // Delete first so that the entry moves to the end: the map stays in time order.
    this.byKey.delete(key);
    this.byKey.set(key, { atMs: nowMs, record: entry.record, action });
    this.prune(nowMs);
  }

  private prune(nowMs: number): void {
    const oldestMs = nowMs - this.init.windowMs;
    for (const [key, change] of this.byKey) {
      if (change.atMs > oldestMs) break;
      this.byKey.delete(key);
    }
  }
}
