import type { InstanceStore, StoreChange } from '../registry/store.js';

/** Why this peer stopped serving an instance whose lease ran out. */
export type EvictionReason = 'expired' | 'orphan' | 'hidden';

/** Counts of the writes accepted by this peer, per namespace, since the counter started. */
export interface WriteCountsSnapshot {
  registrations: Map<string, number>;
  cancels: Map<string, number>;
  /** Keyed `namespace` then reason. */
  evictions: Map<string, Record<EvictionReason, number>>;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/**
 * Classifies one change of the store's feed as a registration, a cancel or an eviction made
 * by this peer, or nothing. Pure. Only local changes count: a write replicated from another
 * peer is counted by the peer that made it.
 * - registration: a local write of a live record where there was none (or a tombstone);
 * - cancel / eviction: a local write that turns a live record into a tombstone; an eviction of
 *   an instance owned elsewhere is an orphan sweep;
 * - hidden: a foreign instance whose owner is down stops being served here (local only).
 */
export function classifyChange(change: StoreChange): 'registration' | 'cancel' | EvictionReason | null {
  if (change.origin !== 'local') return null;
  const { record } = change.entry;
  if (change.kind === 'local') return change.entry.hidden ? 'hidden' : null;
  const wasLive = change.before !== null && change.before.deleted === null;
  if (record.deleted === null) return wasLive ? null : 'registration';
  if (!wasLive) return null;
  if (record.deleted === 'cancel') return 'cancel';
  return change.before!.owner === record.owner ? 'expired' : 'orphan';
}

/**
 * Counts registrations, cancels and evictions from the store's change feed, so that the hot
 * paths (register, cancel, the reaper) carry no metrics code of their own.
 */
export class WriteCounts {
  private readonly registrations = new Map<string, number>();
  private readonly cancels = new Map<string, number>();
  private readonly evictions = new Map<string, Record<EvictionReason, number>>();
  private readonly unsubscribe: () => void;

  constructor(store: Pick<InstanceStore, 'onChange'>) {
    this.unsubscribe = store.onChange((change) => this.count(change));
  }

  stop(): void {
    this.unsubscribe();
  }

  snapshot(): WriteCountsSnapshot {
    return { registrations: this.registrations, cancels: this.cancels, evictions: this.evictions };
  }

  private count(change: StoreChange): void {
    const kind = classifyChange(change);
    if (kind === null) return;
    const { namespace } = change.entry.record;
    if (kind === 'registration') bump(this.registrations, namespace);
    else if (kind === 'cancel') bump(this.cancels, namespace);
    else {
      let byReason = this.evictions.get(namespace);
      if (!byReason) this.evictions.set(namespace, (byReason = { expired: 0, orphan: 0, hidden: 0 }));
      byReason[kind] += 1;
    }
  }
}
