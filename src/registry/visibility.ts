import type { StoredInstance } from './types.js';

/** Whether a peer is alive from this peer's point of view (membership answers it). */
export interface PeerLiveness {
  isUp(peerId: string): boolean;
}

/** What a lease decision needs to know about where it is made. */
export interface LeaseView {
  nowMs: number;
  selfId: string;
  liveness: PeerLiveness;
}

/**
 * Is the instance alive from this peer's point of view? The owner's lease decides: on the
 * owner it is the local lease; elsewhere the instance lives as long as its owner is up, and
 * only a local lease (a grace period or heartbeats received here) covers for a down owner.
 */
export function isLeaseLive(entry: StoredInstance, view: LeaseView): boolean {
  if (entry.record.deleted !== null || entry.hidden) return false;
  if (entry.record.owner !== view.selfId && view.liveness.isUp(entry.record.owner)) return true;
  return entry.leaseExpiresAtMs > view.nowMs;
}

/**
 * Milliseconds of lease left as this peer sees it; what travels on the wire (peers' clocks may
 * disagree, so absolute times never do). On a peer that does not own the instance while its
 * owner is up, the owner holds the lease: the answer is then at least one full lease.
 */
export function leaseRemainingMs(entry: StoredInstance, view: LeaseView): number {
  if (entry.record.deleted !== null || entry.hidden) return 0;
  const localMs = Math.max(0, entry.leaseExpiresAtMs - view.nowMs);
  if (entry.record.owner !== view.selfId && view.liveness.isUp(entry.record.owner)) {
    return Math.max(localMs, entry.record.leaseDurationMs);
  }
  return localMs;
}
