import type { SyncPolicy } from '../config/settings.js';

/**
 * The sync policies as decisions (docs/durability.md says what each risks):
 * - `always`: a write is answered after its record is fsynced; concurrent writes share one.
 * - `interval`: answered once the record is written to the file (in the OS page cache, safe
 *   from a crash of the peer); the log is fsynced every `syncIntervalMs` when it changed.
 * - `never`: answered once written to the file; only segment rolls and shutdown fsync.
 */
export function barrierWaitsForSync(policy: SyncPolicy): boolean {
  return policy === 'always';
}

/** How often the log is fsynced by a timer; null when no timer is needed. */
export function periodicSyncMs(policy: SyncPolicy, syncIntervalMs: number): number | null {
  return policy === 'interval' ? syncIntervalMs : null;
}

export interface SnapshotProgress {
  /** Log bytes appended since the last snapshot started. */
  bytesSinceSnapshot: number;
  /** Records appended since the last snapshot started. */
  recordsSinceSnapshot: number;
  msSinceSnapshot: number;
}

/** Whether a snapshot is due: the log grew past its threshold, or the interval passed with writes in it. */
export function snapshotDue(
  progress: SnapshotProgress,
  settings: { snapshotLogBytes: number; snapshotIntervalMs: number },
): boolean {
  if (progress.recordsSinceSnapshot === 0) return false;
  return progress.bytesSinceSnapshot >= settings.snapshotLogBytes || progress.msSinceSnapshot >= settings.snapshotIntervalMs;
}
