import type { LocalLeaseState } from './store.js';
import type { InstanceRecord, StoredInstance } from './types.js';
import type { LeaseView, PeerLiveness } from './visibility.js';

/** Why a heartbeat here takes an instance over (the takeover's logged `why`). */
export type TakeoverReason = 'owner restarted' | 'owner down';

/**
 * What a heartbeat here does: `renew` (this peer owns the instance), `relay` (a live peer owns
 * it and presumably hears its client: only the local lease moves), or take the instance over.
 */
export type HeartbeatDecision = 'renew' | 'relay' | { readonly takeover: TakeoverReason };

/** What the lease of a record applied from another peer is decided from. */
export interface RemoteLeaseFacts {
  nowMs: number;
  selfId: string;
  liveness: PeerLiveness;
  /** `ownerDownGraceMs`: the least grace a down owner's instances get here (0: their lease). */
  ownerDownGraceMs: number;
}

/**
 * The lease-ownership rules the registry applies: who holds an instance's lease after a write
 * or a heartbeat here, and until when this peer serves it. They are pure decisions of the lease
 * layer (src/lease/ownership.ts, with the reasons each rule exists); the lease layer sits above
 * this one, so the rules are injected (`RegistryComponents.ownership`) rather than imported.
 */
export interface OwnershipRules {
  /** What a heartbeat here does to `entry`; `restartedOwners`: peers seen starting again, and when. */
  heartbeatDecision(entry: StoredInstance, view: LeaseView, restartedOwners: ReadonlyMap<string, number>): HeartbeatDecision;
  /** The lease a register here gives; `current` is the live instance it registers again, if any. */
  registeredLease(current: StoredInstance | undefined, selfId: string, nowMs: number, leaseDurationMs: number): LocalLeaseState;
  /** The lease of an instance this peer owns, renewed until `untilMs` by its client here. */
  ownLease(untilMs: number, ownedSinceMs: number): LocalLeaseState;
  /** The local lease a heartbeat relayed for a live owner moves. */
  relayedLease(entry: StoredInstance, untilMs: number): Pick<LocalLeaseState, 'heardUntilMs' | 'leaseExpiresAtMs'>;
  /** Whether this peer takes `entry` over when its owner `askingOwner`, about to evict it at `version`, asks. */
  takesOverAtExpiry(entry: StoredInstance, askingOwner: string, version: string, nowMs: number): boolean;
  /** The lease of an instance this peer takes over, renewed until `untilMs`. */
  takenOverLease(entry: StoredInstance, untilMs: number, nowMs: number): LocalLeaseState;
  /** The lease here of a record another peer sent, with `leaseRemainingMs` left as the sender saw it. */
  remoteLease(current: StoredInstance | undefined, record: InstanceRecord, leaseRemainingMs: number, facts: RemoteLeaseFacts): LocalLeaseState;
  /** Until when `entry` stays served here once its owner is seen down. */
  ownerDownLeaseExpiresAtMs(entry: StoredInstance, nowMs: number, ownerDownGraceMs: number): number;
  /** The lease of a record reloaded from this peer's data dir at start. */
  restoredLease(record: InstanceRecord, nowMs: number, selfId: string): LocalLeaseState;
}
