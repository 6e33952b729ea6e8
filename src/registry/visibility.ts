import type { StoredInstance } from './types.js';

/** Whether a peer is alive from this peer's point of view (membership answers it). */
export interface PeerLiveness {
  isUp(peerId: string): boolean;
  /**
   * Since when every known peer has been up (none suspect or down) from this peer's point of
   * view; null while one is not. Absent: every peer always answers (a cluster of one, tests).
   */
  allUpSinceMs?(): number | null;
  /** True for a peer this one knows and holds down (past suspicion); absent: none is. */
  heldDown?(peerId: string): boolean;
  /**
   * True while another peer is up (or suspect): it may hear the client of an instance this
   * peer owns, so the owner asks it before evicting (the lease check). Absent: none is.
   */
  othersUp?(): boolean;
}

/**
 * The eviction guards in force right now (decided by the lease layer, read here so that what
 * is served matches what the reaper does):
 * - `suspendOwnedExpiry`: self-preservation is on; this peer's expired instances stay served;
 * - `holdDownOwners`: the partition guard is on; instances of down owners stay served past
 *   their grace lease.
 */
export interface EvictionGuards {
  suspendOwnedExpiry: boolean;
  holdDownOwners: boolean;
}

export const NO_GUARDS: EvictionGuards = { suspendOwnedExpiry: false, holdDownOwners: false };

/** What a lease decision needs to know about where and when it is made. */
export interface LeaseView {
  nowMs: number;
  selfId: string;
  liveness: PeerLiveness;
  guards: EvictionGuards;
  /** The region of a zone as the peers' configuration says; instance views carry it. */
  regionOfZone?: (zone: string) => string | undefined;
}

/**
 * An instance's lease as this peer sees it:
 * - `live`: the owner's lease runs (on the owner: the local lease; elsewhere: the owner is up,
 *   or a grace lease / local heartbeats cover for a down owner);
 * - `held`: the lease ran out, but an eviction guard keeps the instance served, or (on the
 *   owner, while another peer is up) the reaper has not yet asked the other peers whether one
 *   of them hears its client, or they have not answered (the lease check);
 * - `expired`: the lease ran out; the reaper evicts or hides it at its next run;
 * - `gone`: deleted (tombstone) or hidden here.
 */
export type LeaseState = 'live' | 'held' | 'expired' | 'gone';

export function leaseState(entry: StoredInstance, view: LeaseView): LeaseState {
  const { record } = entry;
  if (record.deleted !== null || entry.hidden) return 'gone';
  const own = record.owner === view.selfId;
  if (!own && view.liveness.isUp(record.owner)) return 'live';
  if (entry.leaseExpiresAtMs > view.nowMs) return 'live';
  if (entry.held) return 'held';
  if (own ? view.guards.suspendOwnedExpiry : view.guards.holdDownOwners) return 'held';
  if (own && heldAfterRestart(entry, view.nowMs, view.liveness)) return 'held';
  // Heartbeats are not replicated: the client may have moved to a peer that hears it. The
  // reaper asks before it evicts (replication/lease-check.ts), and until then it stays served.
  if (own && view.liveness.othersUp?.()) return 'held';
  return 'expired';
}

/**
 * The restarted owner's hold, one rule for the reaper and for every read: an instance this peer
 * owns, took back at a restart (from its data dir or a start-up snapshot) and has not heard
 * since (`heardUntilMs` 0), may be heartbeating a peer this one cannot reach. That peer takes
 * it over (the owner restarted, or is down from its side), but its takeover cannot arrive
 * while the two are cut off, nor before contact is back and it was sent. So the instance is
 * held, served and not evicted, while any peer does not answer and for one whole lease of it
 * after every peer answers again: its client heartbeats within a lease, the peer it talks to
 * then takes it over, and replication brings that here. Past that, nobody hears it and the
 * reaper evicts it. Reads must apply the rule themselves: between the lease's end and the
 * next reaper run (which flags it `held`) the instance would otherwise be served as expired,
 * that is not at all (found by chaos, seed 8675309, 5 peers).
 */
export function heldAfterRestart(entry: StoredInstance, nowMs: number, liveness: PeerLiveness): boolean {
  if (entry.heardUntilMs !== 0) return false;
  if (!liveness.allUpSinceMs) return false;
  const sinceMs = liveness.allUpSinceMs();
  return sinceMs === null || nowMs - sinceMs < entry.record.leaseDurationMs;
}

/** Served to readers: a live lease, or one an eviction guard holds. */
export function isServed(entry: StoredInstance, view: LeaseView): boolean {
  const state = leaseState(entry, view);
  return state === 'live' || state === 'held';
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
