import { parseVersion } from '../clock/hlc.js';
import type { HeartbeatDecision, OwnershipRules, RemoteLeaseFacts } from '../registry/ownership-rules.js';
import { NO_LEASE, type LocalLeaseState } from '../registry/store.js';
import type { InstanceRecord, StoredInstance } from '../registry/types.js';
import type { LeaseView } from '../registry/visibility.js';

// Lease ownership: who holds an instance's lease, and until when this peer serves it. Pure
// decisions; the registry applies them (src/registry/registry.ts, through `OWNERSHIP_RULES`).

/** A lease renewed by a client talking to this peer, which owns the instance since `ownedSinceMs`. */
export function ownLease(untilMs: number, ownedSinceMs: number): LocalLeaseState {
  return { leaseExpiresAtMs: untilMs, heardUntilMs: untilMs, hidden: false, held: false, ownedSinceMs };
}

/**
 * The lease a register here gives: this peer becomes the owner, renewed for one lease. An
 * instance it already owned keeps `ownedSinceMs` (self-preservation counts the renewals it
 * expects from when this peer became the owner); otherwise it is owned from now.
 */
export function registeredLease(current: StoredInstance | undefined, selfId: string, nowMs: number, leaseDurationMs: number): LocalLeaseState {
  const alreadyOwned = current !== undefined && current.record.owner === selfId;
  return ownLease(nowMs + leaseDurationMs, alreadyOwned ? current.ownedSinceMs : nowMs);
}

// One object per reason, so that a decision allocates nothing on the heartbeat path.
const OWNER_RESTARTED: HeartbeatDecision = { takeover: 'owner restarted' };
const OWNER_DOWN: HeartbeatDecision = { takeover: 'owner down' };

/**
 * What a heartbeat here does (docs/replication.md, Takeover): this peer renews what it owns; for an
 * instance another peer owns it relays the heartbeat (only the local lease moves) while that
 * owner is up and presumably hears the client, and takes the instance over when the owner is
 * down (or the instance was hidden because of that) or restarted since it wrote the record.
 */
export function heartbeatDecision(entry: StoredInstance, view: LeaseView, restartedOwners: ReadonlyMap<string, number>): HeartbeatDecision {
  const { record } = entry;
  if (record.owner === view.selfId) return 'renew';
  const restartedAtMs = restartedOwners.get(record.owner);
  // The owner restarted since it wrote this record: it holds no lease a client renews (see
  // `Registry.ownerRestarted`).
  if (restartedAtMs !== undefined && parseVersion(record.version).wallMs < restartedAtMs) return OWNER_RESTARTED;
  if (entry.hidden || !view.liveness.isUp(record.owner)) return OWNER_DOWN;
  return 'relay';
}

/**
 * A heartbeat relayed for a live owner: this peer's client vouches for the instance until
 * `untilMs`, and the local lease is never shortened by it.
 */
export function relayedLease(entry: StoredInstance, untilMs: number): Pick<LocalLeaseState, 'heardUntilMs' | 'leaseExpiresAtMs'> {
  return { heardUntilMs: untilMs, leaseExpiresAtMs: Math.max(entry.leaseExpiresAtMs, untilMs) };
}

/**
 * Whether this peer takes over an instance whose owner, `askingOwner`, found its lease ended and
 * asks before it evicts (the `lease-check` peer call): yes when the asker still owns it here,
 * at the very version it holds (a takeover of an older version here would outvote a change
 * made on the owner since), and a client heartbeated it here within its lease (`heardUntilMs`
 * ahead). That client moved to this peer while the owner lived, so only this peer hears it.
 */
export function takesOverAtExpiry(entry: StoredInstance, askingOwner: string, version: string, nowMs: number): boolean {
  const { record } = entry;
  return record.deleted === null && record.owner === askingOwner && record.version === version && entry.heardUntilMs > nowMs;
}

/**
 * The lease of an instance taken over here (a heartbeat's takeover, an eviction reasserted, or an owner's lease check):
 * owned from now, renewed until `untilMs`; what a client here vouched for is kept if longer.
 */
export function takenOverLease(entry: StoredInstance, untilMs: number, nowMs: number): LocalLeaseState {
  return {
    leaseExpiresAtMs: untilMs,
    heardUntilMs: Math.max(entry.heardUntilMs, untilMs),
    hidden: false,
    held: false,
    ownedSinceMs: nowMs,
  };
}

/** The grace a down owner's instance gets here: its lease, or `ownerDownGraceMs` if longer. */
export function ownerDownGraceMs(record: InstanceRecord, configuredMs: number): number {
  return Math.max(record.leaseDurationMs, configuredMs);
}

/**
 * Until when an instance stays served here once its owner is seen down: one grace period from
 * now (see `ownerDownGraceMs`), since this peer cannot tell a dead peer from one it is cut off
 * from; never less than the lease it had or what a client here vouched for.
 */
export function ownerDownLeaseExpiresAtMs(entry: StoredInstance, nowMs: number, configuredGraceMs: number): number {
  const graceUntilMs = nowMs + ownerDownGraceMs(entry.record, configuredGraceMs);
  return Math.max(entry.leaseExpiresAtMs, entry.heardUntilMs, graceUntilMs);
}

/**
 * The lease here of a record another peer sent (replication, anti-entropy, snapshot), with
 * `leaseRemainingMs` left as the sender saw it. A tombstone has none. Otherwise the lease runs
 * at least as long as the sender saw it, what a client here vouched for, the lease kept for the
 * same owner, and the owner-down grace below.
 */
export function remoteLease(current: StoredInstance | undefined, record: InstanceRecord, leaseRemainingMs: number, facts: RemoteLeaseFacts): LocalLeaseState {
  if (record.deleted !== null) return NO_LEASE;
  const { nowMs, selfId } = facts;
  const heardUntilMs = current?.heardUntilMs ?? 0;
  // A newer version of the same owner's instance keeps the lease it has here: that may be the
  // grace this peer gave it when the owner went down, and the sender, who may still have seen
  // the owner up, sent one lease (a status change made there would otherwise cut the grace
  // short and hide the instance while its client heartbeats elsewhere; found by chaos).
  const keptMs = current && current.record.deleted === null && current.record.owner === record.owner ? current.leaseExpiresAtMs : 0;
  // An instance of an owner this peer holds down, arriving now (the owner wrote it since, or
  // another peer relays it), gets the grace the owner's other instances got when it went
  // down: this peer may only be cut off from a live owner whose client heartbeats it (found
  // by chaos: seed 8675309, 5 peers, a peer slow to answer held down by another that hid its
  // new instance one lease later). One the sender vouches for only: nothing is revived.
  const graceUntilMs =
    record.owner !== selfId && leaseRemainingMs > 0 && facts.liveness.heldDown?.(record.owner) === true
      ? nowMs + ownerDownGraceMs(record, facts.ownerDownGraceMs)
      : 0;
  // Our own record coming back (a restart, a snapshot): we own it from now unless we already did.
  const ownedSinceMs = record.owner !== selfId ? 0 : current?.record.owner === selfId ? current.ownedSinceMs : nowMs;
  return {
    leaseExpiresAtMs: Math.max(nowMs + Math.max(0, leaseRemainingMs), heardUntilMs, keptMs, graceUntilMs),
    heardUntilMs,
    hidden: false,
    held: false,
    ownedSinceMs,
  };
}

/**
 * The lease of a record reloaded from this peer's data dir at start. A tombstone has none.
 * Every live instance gets a fresh grace lease, now + its lease duration, so its client has
 * time to heartbeat before the reaper looks at it; nobody has heartbeated here yet, so
 * `heardUntilMs` stays 0.
 */
export function restoredLease(record: InstanceRecord, nowMs: number, selfId: string): LocalLeaseState {
  if (record.deleted !== null) return NO_LEASE;
  const graceUntilMs = nowMs + record.leaseDurationMs;
  // An instance this peer owned is owned again from now: self-preservation counts its
  // expected renewals from the restart, not from before it.
  const ownedSinceMs = record.owner === selfId ? nowMs : 0;
  return { leaseExpiresAtMs: graceUntilMs, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs };
}

/** The rules as the registry takes them (`RegistryComponents.ownership`). */
export const OWNERSHIP_RULES: OwnershipRules = {
  heartbeatDecision,
  registeredLease,
  ownLease,
  relayedLease,
  takesOverAtExpiry,
  takenOverLease,
  remoteLease,
  ownerDownLeaseExpiresAtMs,
  restoredLease,
};
