import { compareVersions, type HybridClock, type Version } from '../clock/hlc.js';
import { isTombstoneExpired } from '../registry/merge.js';
import type { Registry } from '../registry/registry.js';
import type { InstanceRecord } from '../registry/types.js';

export interface RestoreSummary {
  /** Live instances loaded, each with a fresh grace lease. */
  instances: number;
  /** Tombstones loaded (they keep older writes from coming back). */
  tombstones: number;
  /** Tombstones past their TTL, not loaded. */
  expiredTombstones: number;
  /** Records the store already held in a newer version. */
  superseded: number;
  maxVersion: Version | null;
}

/** Where recovered records go: the registry, the one writer of the store (read through `store`). */
export type RestoreTarget = Pick<Registry, 'store' | 'restore'>;

/**
 * Loads recovered records into the store through the registry (`Registry.restore`: origin
 * `restore`, not a new write, so nothing appends or replicates it again; every live instance
 * gets the lease layer's fresh grace lease, see `restoredLease`). Records past their TTL or
 * older than what the store holds are skipped. The hybrid clock observes the newest version,
 * so the peer's next write is newer than anything it wrote before the restart.
 */
export function restoreRecords(
  target: RestoreTarget,
  hlc: HybridClock,
  records: Iterable<InstanceRecord>,
  ctx: { nowMs: number; tombstoneTtlMs: number },
): RestoreSummary {
  const summary: RestoreSummary = { instances: 0, tombstones: 0, expiredTombstones: 0, superseded: 0, maxVersion: null };
  const { store } = target;
  for (const record of records) {
    if (summary.maxVersion === null || compareVersions(record.version, summary.maxVersion) > 0) summary.maxVersion = record.version;
    if (isTombstoneExpired(record, ctx.nowMs, ctx.tombstoneTtlMs)) {
      summary.expiredTombstones += 1;
      continue;
    }
    const current = store.get(record);
    if (current && compareVersions(record.version, current.record.version) <= 0) {
      summary.superseded += 1;
      continue;
    }
    target.restore(record, ctx.nowMs);
    if (record.deleted !== null) summary.tombstones += 1;
    else summary.instances += 1;
  }
  if (summary.maxVersion !== null) hlc.observe(summary.maxVersion);
  return summary;
}
