import type { Clock } from '../clock/clock.js';
import type { HybridClock } from '../clock/hlc.js';
import { RegistryError } from '../errors.js';
import { LineBudget } from '../log/line-budget.js';
import type { Logger } from '../log/logger.js';
import { sameExtensions } from './extensions.js';
import { decideMerge, type MergeDecision } from './merge.js';
import type { OwnershipRules } from './ownership-rules.js';
import { OwnerPasses } from './owner-passes.js';
import { checkQuota, type InstanceQuota } from './quota.js';
import { NO_LEASE, type InstanceStore, type LocalLeaseState } from './store.js';
import {
  groupOf,
  instanceKeyString,
  type DeleteReason,
  type InstanceData,
  type InstanceKey,
  type InstanceRecord,
  type StoredInstance,
} from './types.js';
import type { RegistrationInput } from './validate.js';
import { isServed, NO_GUARDS, type EvictionGuards, type LeaseView, type PeerLiveness } from './visibility.js';

/** Counts lease renewals of instances this peer owns (self-preservation's measure). */
export interface RenewalSink {
  recordRenewal(nowMs: number): void;
}

/**
 * How a heartbeat went: `renewed` (this peer owns the instance), `relayed` (another live peer
 * owns it; only the local lease moved), `takeover` (its owner is down or restarted: this
 * peer took it over; see `heartbeatDecision` in lease/ownership.ts), `unknown` (answered 404, so the client registers again).
 */
export type HeartbeatOutcome = 'renewed' | 'relayed' | 'takeover' | 'unknown';

/** Told of every heartbeat's outcome (the metrics count them); called on the hot path, so keep it cheap. */
export interface HeartbeatSink {
  heartbeat(outcome: HeartbeatOutcome): void;
}

export interface RegistryComponents {
  clock: Clock;
  hlc: HybridClock;
  store: InstanceStore;
  liveness: PeerLiveness;
  logger: Logger;
  /** The eviction guards in force (self-preservation, partition guard); none when absent. */
  guards?: () => EvictionGuards;
  /** Told of every renewal (register, heartbeat, takeover) of an instance owned here. */
  renewals?: RenewalSink;
  /** The region of a zone (from the peers' configuration), for instance views. */
  regionOfZone?: (zone: string) => string | undefined;
  /** Told of every heartbeat's outcome; none when absent. */
  heartbeats?: HeartbeatSink;
  /** The lease-ownership rules (src/lease/ownership.ts `OWNERSHIP_RULES`): the decisions this class applies. */
  ownership: OwnershipRules;
}

export interface RegistryInit {
  /** This peer's id: the owner of every instance whose lease it takes. */
  peerId: string;
  /** How long a tombstone is kept (see `tombstoneTtlMs` in the configuration reference). */
  tombstoneTtlMs: number;
  /** Most instances a register may bring one service and one namespace to; none when absent. */
  quota?: InstanceQuota;
  /** The least grace a down owner's instances get (see `ownerDownGraceMs`); their lease if longer. */
  ownerDownGraceMs?: number;
  /** Entries an owner pass visits per turn; default `OWNER_PASS_SLICE_ENTRIES` (tests set it low). */
  ownerPassSliceEntries?: number;
}

export interface RegisterResult {
  entry: StoredInstance;
  /** True for a new instance (201), false for a re-registration (200). */
  created: boolean;
}

/** Instance writes made here logged one by one at info each second; the rest at debug, counted in one line. */
export const WRITE_LINES_PER_SECOND = 100;

function sameData(a: InstanceData, b: InstanceData): boolean {
  return (
    a.host === b.host &&
    a.port === b.port &&
    a.securePort === b.securePort &&
    a.status === b.status &&
    a.weight === b.weight &&
    a.zone === b.zone &&
    groupOf(a) === groupOf(b) &&
    JSON.stringify(a.metadata) === JSON.stringify(b.metadata) &&
    a.renewalIntervalMs === b.renewalIntervalMs &&
    sameExtensions(a.extensions, b.extensions)
  );
}

/**
 * The registry's operations on one peer: every write to the store goes through here (client
 * writes, replicated writes, the reaper's and the data dir's restore), synchronously (never an
 * `await` between reading and writing the store). Local writes get a fresh HLC version with
 * this peer as owner; the store's change feed tells replication and watchers. Heartbeats only
 * touch the local lease. Who owns a lease, and for how long, is decided by the lease layer's
 * rules (`components.ownership`); this class applies them to the map.
 */
export class Registry {
  readonly peerId: string;
  private readonly log: Logger;
  /** Peers seen starting again, and when: their records written before that are held by a lost lease. */
  private readonly restartedOwners = new Map<string, number>();
  /** Caps the info lines of instance writes made here (registered, updated, cancelled); the rest go to debug. */
  private readonly writeLines: LineBudget;
  private readonly rules: OwnershipRules;
  /** What an owner going down or coming back does to its instances, in turns (owner-passes.ts). */
  private readonly ownerPasses: OwnerPasses;
  /** Membership as readers see it: an owner is up until its down pass ends. */
  private readonly liveness: PeerLiveness;

  constructor(
    private readonly components: RegistryComponents,
    private readonly init: RegistryInit,
  ) {
    this.peerId = init.peerId;
    this.rules = components.ownership;
    this.log = components.logger.child({ component: 'registry' });
    this.writeLines = new LineBudget(components.clock, WRITE_LINES_PER_SECOND, (count, sinceMs) =>
      this.log.info({ count, sinceMs }, `instance writes logged at debug only (over ${WRITE_LINES_PER_SECOND} lines a second)`),
    );
    const graceMs = init.ownerDownGraceMs ?? 0;
    this.ownerPasses = new OwnerPasses(
      {
        clock: components.clock,
        store: components.store,
        graceUntilMs: (entry, nowMs) => this.rules.ownerDownLeaseExpiresAtMs(entry, nowMs, graceMs),
        ended: (owner, down, changed) => {
          if (down && changed > 0) this.log.warn({ owner, instances: changed }, 'owner down: its instances get one grace period');
        },
      },
      init.ownerPassSliceEntries,
    );
    this.liveness = this.ownerPasses.liveness(components.liveness);
  }

  /** Writes the summary of instance writes not logged one by one, if any (the reaper calls it on every run). */
  flushLogSummary(): void {
    this.writeLines.flush();
  }

  /** An instance write's line: at info within the budget, at debug beyond it (counted in the summary). */
  private logWrite(fields: Record<string, unknown>, message: string): void {
    if (this.writeLines.allow()) this.log.info(fields, message);
    else this.log.debug(fields, message);
  }

  /** What the lease rules need to decide now. */
  leaseView(): LeaseView {
    // Built for every request that answers instances: one literal, no spread.
    return {
      nowMs: this.components.clock.nowMs(),
      selfId: this.peerId,
      liveness: this.liveness,
      guards: this.components.guards?.() ?? NO_GUARDS,
      regionOfZone: this.components.regionOfZone,
    };
  }

  get store(): InstanceStore {
    return this.components.store;
  }

  /**
   * Registers an instance or registers it again; this peer becomes its lease owner. A new
   * instance beyond the quota is refused (REG_ERR_QUOTA_EXCEEDED) before anything changes.
   */
  register(input: RegistrationInput): RegisterResult {
    const { store, clock } = this.components;
    const current = store.get(input);
    const nowMs = clock.nowMs();
    const exists = current !== undefined && current.record.deleted === null;
    // Only local registrations are checked: replicated writes were accepted by their peer.
    if (!exists && this.init.quota) checkQuota(store, this.init.quota, input);
    const alreadyOwned = exists && current.record.owner === this.peerId;
    const lease = this.rules.registeredLease(exists ? current : undefined, this.peerId, nowMs, input.leaseDurationMs);
    this.components.renewals?.recordRenewal(nowMs);
    if (
      alreadyOwned &&
      current.record.leaseDurationMs === input.leaseDurationMs &&
      sameData(current.record.data, input.data)
    ) {
      // Nothing replicated changed: a re-registration is then just a lease renewal.
      store.updateLease(current, lease, !isServed(current, this.leaseView()));
      return { entry: current, created: false };
    }
    const record: InstanceRecord = {
      namespace: input.namespace,
      service: input.service,
      instanceId: input.instanceId,
      data: input.data,
      version: this.components.hlc.next(),
      owner: this.peerId,
      deleted: null,
      leaseDurationMs: input.leaseDurationMs,
      registeredAtMs: exists ? current.record.registeredAtMs : nowMs,
    };
    const entry = store.write(record, lease, 'local');
    this.logWrite(
      { key: instanceKeyString(record), host: record.data.host, port: record.data.port, status: record.data.status },
      exists ? 'instance re-registered' : 'instance registered',
    );
    return { entry, created: !exists };
  }

  /**
   * Renews the lease of a known instance on this peer. Not replicated. What it does to an
   * instance another peer owns (relay it, or take the instance over) is the lease layer's
   * `heartbeatDecision`.
   */
  heartbeat(key: InstanceKey): StoredInstance {
    const entry = this.find(key);
    if (!entry) {
      this.components.heartbeats?.heartbeat('unknown');
      throw notRegistered(key);
    }
    const view = this.leaseView();
    const renewUntilMs = view.nowMs + entry.record.leaseDurationMs;
    const decision = this.rules.heartbeatDecision(entry, view, this.restartedOwners);
    if (decision === 'renew') {
      this.components.heartbeats?.heartbeat('renewed');
      this.components.renewals?.recordRenewal(view.nowMs);
      this.components.store.updateLease(entry, this.rules.ownLease(renewUntilMs, entry.ownedSinceMs), !isServed(entry, view));
      return entry;
    }
    if (decision === 'relay') {
      this.components.heartbeats?.heartbeat('relayed');
      this.components.store.updateLease(entry, this.rules.relayedLease(entry, renewUntilMs), false);
      return entry;
    }
    this.components.heartbeats?.heartbeat('takeover');
    return this.takeOver(entry, entry.record, renewUntilMs, decision.takeover);
  }

  /**
   * Answers an owner that found the lease of `key` ended and asks, before it evicts, whether
   * this peer hears its client (the lease layer's `takesOverAtExpiry`): if so, takes it over
   * (a replicated write) and returns it; otherwise changes nothing. Heartbeats are not
   * replicated, so this is how a client that moved here while its owner lived keeps its
   * instance served everywhere through the owner's expiry.
   */
  takeOverAtExpiry(key: InstanceKey, askingOwner: string, version: string): StoredInstance | undefined {
    const entry = this.find(key);
    if (!entry || !this.rules.takesOverAtExpiry(entry, askingOwner, version, this.components.clock.nowMs())) return undefined;
    return this.takeOver(entry, entry.record, entry.heardUntilMs, 'its owner found its lease ended; its client heartbeats here');
  }

  /** Cancels an instance: a tombstone replaces it everywhere. */
  cancel(key: InstanceKey): StoredInstance {
    const entry = this.requireLive(key);
    return this.remove(entry, 'cancel');
  }

  /** Changes some of an instance's data (status, metadata); the lease owner stays the same. */
  update(key: InstanceKey, patch: Partial<InstanceData>): StoredInstance {
    const entry = this.requireLive(key);
    const data = { ...entry.record.data, ...patch };
    if (sameData(data, entry.record.data)) return entry;
    const record: InstanceRecord = { ...entry.record, data, version: this.components.hlc.next() };
    const updated = this.components.store.write(record, pickLease(entry), 'local');
    this.logWrite({ key: instanceKeyString(record), status: data.status }, 'instance updated');
    return updated;
  }

  /** Evicts an instance whose lease ran out; replicated, so only its owner (or the orphan sweeper) calls it. */
  evict(entry: StoredInstance, why: string): StoredInstance {
    return this.remove(entry, 'evict', why);
  }

  /** Hides a foreign instance whose owner is down and whose grace ran out; local only. */
  hide(entry: StoredInstance): void {
    if (entry.hidden) return;
    this.components.store.updateLease(entry, { hidden: true, held: false }, true);
    // Within the write lines' budget: an owner of 100,000 instances going down has them all hidden in one reaper run.
    this.logWrite({ key: instanceKeyString(entry.record), owner: entry.record.owner }, 'instance hidden: its owner is down and its grace lease ran out');
  }

  /**
   * Gives a down owner's instance one grace period from now, as when its owner went down (the
   * lease layer's `ownerDownLeaseExpiresAtMs`): the reaper's answer to a partition guard that
   * lifts by itself (see Reaper.runOnce). Local only; what is served does not change.
   */
  graceAgain(entry: StoredInstance): void {
    const leaseExpiresAtMs = this.rules.ownerDownLeaseExpiresAtMs(entry, this.components.clock.nowMs(), this.init.ownerDownGraceMs ?? 0);
    this.components.store.updateLease(entry, { leaseExpiresAtMs, held: false }, false);
  }

  /**
   * Flags an instance whose lease ran out as `held`: an eviction guard keeps it served (the
   * reaper decides which); local only, cleared by a heartbeat.
   */
  hold(entry: StoredInstance): void {
    if (!entry.held) this.components.store.updateLease(entry, { held: true }, true);
  }

  /** Drops an expired tombstone for good (the reaper); local only, off the change feed. */
  purge(entry: StoredInstance): void {
    this.components.store.purge(entry.record);
  }

  /**
   * Loads a record recovered from this peer's data dir at start (src/persistence/restore.ts,
   * which checks that it is newer than what the store holds): stored as origin `restore`, so
   * it is neither logged nor replicated again, with the lease layer's `restoredLease`. Called
   * once per record for 100,000 records at start: nothing here beyond the write.
   */
  restore(record: InstanceRecord, nowMs: number): void {
    this.components.store.write(record, this.rules.restoredLease(record, nowMs, this.peerId), 'restore');
  }

  /**
   * Applies a record another peer sent (replication, anti-entropy, snapshot). `leaseRemainingMs`
   * is the sender's view of the lease left. The applied write is not replicated again.
   */
  applyRemote(record: InstanceRecord, leaseRemainingMs: number): MergeDecision {
    const { store, hlc } = this.components;
    hlc.observe(record.version);
    const current = store.get(record);
    const nowMs = this.components.clock.nowMs();
    const decision = decideMerge(current, record, { nowMs, tombstoneTtlMs: this.init.tombstoneTtlMs });
    if (decision === 'ignore') return decision;
    if (decision === 'reassert' && current) {
      this.takeOver(current, { ...record, deleted: null }, current.heardUntilMs, 'evicted elsewhere while heartbeating here');
      return decision;
    }
    const lease = this.rules.remoteLease(current, record, leaseRemainingMs, {
      nowMs,
      selfId: this.peerId,
      liveness: this.liveness,
      ownerDownGraceMs: this.init.ownerDownGraceMs ?? 0,
    });
    store.write(record, lease, 'remote');
    this.log.debug({ key: instanceKeyString(record), version: record.version, deleted: record.deleted }, 'replicated write applied');
    return decision;
  }

  /**
   * Called when membership sees `peerId` go down: its instances get one grace period here (the
   * lease layer's `ownerDownLeaseExpiresAtMs`), in turns; until the last turn the owner counts
   * as up here (owner-passes.ts).
   */
  ownerDown(peerId: string): void {
    this.ownerPasses.down(peerId);
  }

  /** True while `peerId`'s instances are being given their grace: until then it counts as up here (the reaper asks). */
  graceUnderway(peerId: string): boolean {
    return this.ownerPasses.graceUnderway(peerId);
  }

  /** Ends the owner passes still running, in this turn (the peer stops). */
  finishOwnerPasses(): void {
    this.ownerPasses.finishAll();
  }

  /**
   * Called when membership sees `peerId` start again: it lost its leases, and took back from
   * its start-up snapshot (or data dir) the instances it owned. A client that failed over here
   * while it was gone heartbeats this peer, not it: the next heartbeat here for such an
   * instance takes it over (the lease layer's `heartbeatDecision`), before the restarted
   * owner's fresh lease runs out and it evicts them. Only a heartbeat does: a takeover from
   * what this peer heard before would outvote a cancel made meanwhile on another peer.
   */
  ownerRestarted(peerId: string): void {
    this.restartedOwners.set(peerId, this.components.clock.nowMs());
  }

  /** Called when membership sees `peerId` come back: what was hidden for its sake is shown again, in turns. */
  ownerUp(peerId: string): void {
    this.ownerPasses.up(peerId);
  }

  /** The stored instance if it exists and is not a tombstone; hidden ones included. */
  find(key: InstanceKey): StoredInstance | undefined {
    const entry = this.components.store.get(key);
    return entry && entry.record.deleted === null ? entry : undefined;
  }

  private requireLive(key: InstanceKey): StoredInstance {
    const entry = this.find(key);
    if (!entry) throw notRegistered(key);
    return entry;
  }

  private takeOver(entry: StoredInstance, from: InstanceRecord, leaseUntilMs: number, why: string): StoredInstance {
    const record: InstanceRecord = {
      ...from,
      version: this.components.hlc.next(),
      owner: this.peerId,
      deleted: null,
    };
    const previousOwner = entry.record.owner;
    const nowMs = this.components.clock.nowMs();
    this.components.renewals?.recordRenewal(nowMs);
    const written = this.components.store.write(record, this.rules.takenOverLease(entry, leaseUntilMs, nowMs), 'local');
    this.log.info({ key: instanceKeyString(record), previousOwner, why }, 'instance taken over');
    return written;
  }

  private remove(entry: StoredInstance, reason: DeleteReason, why?: string): StoredInstance {
    const record: InstanceRecord = {
      ...entry.record,
      version: this.components.hlc.next(),
      owner: this.peerId,
      deleted: reason,
    };
    const written = this.components.store.write(record, NO_LEASE, 'local');
    const fields = { key: instanceKeyString(record), ...(why === undefined ? {} : { why }) };
    // Evictions are always logged (the reaper caps them per run); cancels share the budget.
    if (reason === 'cancel') this.logWrite(fields, 'instance cancelled');
    else this.log.info(fields, 'instance evicted');
    return written;
  }
}

function notRegistered(key: InstanceKey): RegistryError {
  return new RegistryError(
    'REG_ERR_INSTANCE_NOT_FOUND',
    `instance ${key.instanceId} of service ${key.service} in namespace ${key.namespace} is not registered here`,
  );
}

function pickLease(entry: StoredInstance): LocalLeaseState {
  const { leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs } = entry;
  return { leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs };
}
