import { compareVersions, parseVersion } from '../clock/hlc.js';
import type { InstanceRecord, StoredInstance } from './types.js';

/**
 * What a replica does with a record another peer sent:
 * - `apply`: it is newer; store it.
 * - `ignore`: it is the same write or an older one (or a tombstone too old to matter).
 * - `reassert`: it is an eviction, but a client is still heartbeating this peer for that
 *   instance, so this peer takes the instance over with a newer write instead of dropping it.
 */
export type MergeDecision = 'apply' | 'ignore' | 'reassert';

export interface MergeContext {
  nowMs: number;
  tombstoneTtlMs: number;
}

/** Last-writer-wins on version, with the takeover rule for evictions (see docs/replication.md). */
export function decideMerge(
  current: StoredInstance | undefined,
  incoming: InstanceRecord,
  ctx: MergeContext,
): MergeDecision {
  if (current && compareVersions(incoming.version, current.record.version) <= 0) return 'ignore';
  if (incoming.deleted !== null && isTombstoneExpired(incoming, ctx.nowMs, ctx.tombstoneTtlMs)) {
    // An expired tombstone for a key we do not hold would only be purged again: skip it.
    // If we hold an older live record, the delete still has to land.
    if (!current || current.record.deleted !== null) return 'ignore';
  }
  if (
    incoming.deleted === 'evict' &&
    current !== undefined &&
    current.record.deleted === null &&
    current.heardUntilMs > ctx.nowMs
  ) {
    return 'reassert';
  }
  return 'apply';
}

/**
 * A tombstone expires `tombstoneTtlMs` after the write that made it (by the version's wall
 * time), so every peer drops it at about the same moment and anti-entropy never ships it back.
 */
export function isTombstoneExpired(record: InstanceRecord, nowMs: number, tombstoneTtlMs: number): boolean {
  return record.deleted !== null && parseVersion(record.version).wallMs + tombstoneTtlMs <= nowMs;
}
