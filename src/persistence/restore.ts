import { compareVersions, type HybridClock, type Version } from '../clock/hlc.js';
import { isTombstoneExpired } from '../registry/merge.js';
import type { InstanceStore, LocalLeaseState } from '../registry/store.js';
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

const NO_LEASE: LocalLeaseState = { leaseExpiresAtMs: 0, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: 0, reportedUntilMs: 0 };

/**
 * Loads recovered records into the store as origin `restore` (not a new write: nothing
 * appends or replicates it again). Every live instance gets a fresh grace lease, now + its
 * lease duration, so its client has time to heartbeat before the reaper looks at it; nobody
 * has heartbeated here yet, so `heardUntilMs` stays 0. The hybrid clock observes the newest
 * version, so the peer's next write is newer than anything it wrote before the restart.
 */
export function restoreRecords(
  store: InstanceStore,
  hlc: HybridClock,
  records: Iterable<InstanceRecord>,
  ctx: { nowMs: number; tombstoneTtlMs: number; selfId: string },
): RestoreSummary {
  const summary: RestoreSummary = { instances: 0, tombstones: 0, expiredTombstones: 0, superseded: 0, maxVersion: null };
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
    if (record.deleted !== null) {
      store.write(record, NO_LEASE, 'restore');
      summary.tombstones += 1;
    } else {
      const graceUntilMs = ctx.nowMs + record.leaseDurationMs;
      // An instance this peer owned is owned again from now: self-preservation counts its
      // expected renewals from the restart, not from before it.
      const ownedSinceMs = record.owner === ctx.selfId ? ctx.nowMs : 0;
      // Presumed reported for one lease from the restart, so that a heartbeat here does not take
      // every reloaded instance over at once.
      store.write(
        record,
        { leaseExpiresAtMs: graceUntilMs, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs, reportedUntilMs: graceUntilMs },
        'restore',
      );
      summary.instances += 1;
    }
  }
  if (summary.maxVersion !== null) hlc.observe(summary.maxVersion);
  return summary;
}
