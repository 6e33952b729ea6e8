import type { Clock } from '../clock/clock.js';
import { parseVersion, type HybridClock } from '../clock/hlc.js';
import { RegistryError } from '../errors.js';
import { LineBudget } from '../log/line-budget.js';
import type { Logger } from '../log/logger.js';
import { sameExtensions } from './extensions.js';
import { decideMerge, type MergeDecision } from './merge.js';
import type { InstanceStore, LocalLeaseState } from './store.js';
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
 * owns it; only the local lease moved), `takeover` (its owner is down, or its lease as last
 * reported ends within half a lease: this peer took it over),
 * `unknown` (answered 404, so the client registers again).
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
}

/** `limits.instancesPerServiceMax` and `limits.instancesPerNamespaceMax`. */
export interface InstanceQuota {
  instancesPerServiceMax: number;
  instancesPerNamespaceMax: number;
}

export interface RegisterResult {
  entry: StoredInstance;
  /** True for a new instance (201), false for a re-registration (200). */
  created: boolean;
}

/** Instance writes made here logged one by one at info each second; the rest at debug, counted in one line. */
export const WRITE_LINES_PER_SECOND = 100;

const NO_LEASE: LocalLeaseState = { leaseExpiresAtMs: 0, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: 0, reportedUntilMs: 0 };

/** A lease renewed by a client talking to this peer, which owns the instance since `ownedSinceMs`. */
function ownLease(untilMs: number, ownedSinceMs: number): LocalLeaseState {
  return { leaseExpiresAtMs: untilMs, heardUntilMs: untilMs, hidden: false, held: false, ownedSinceMs, reportedUntilMs: untilMs };
}

/**
 * Whether a heartbeat here for an instance a live peer owns should take it over: the owner's
 * lease, as last reported, ends within half a lease. Heartbeats are not replicated, so the
 * owner is presumably not hearing this client (it registered there and failed over, or a
 * register it gave up on was applied there last); left alone, the owner would evict it at its
 * lease's end and every peer would stop serving it until this peer's takeover came back
 * (found by chaos: seed 8675348, 5 peers). Half a lease leaves the takeover that much time to
 * reach the owner before it evicts; a client that moved peers still causes one takeover.
 */
function ownerLeaseEnding(entry: StoredInstance, nowMs: number): boolean {
  return entry.reportedUntilMs - nowMs < entry.record.leaseDurationMs / 2;
}

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
 * The registry's operations on one peer: every client write and every replicated write goes
 * through here, synchronously (never an `await` between reading and writing the store). Local
 * writes get a fresh HLC version with this peer as owner; the store's change feed tells
 * replication and watchers. Heartbeats only touch the local lease.
 */
export class Registry {
  readonly peerId: string;
  private readonly log: Logger;
  /** Peers seen starting again, and when: their records written before that are held by a lost lease. */
  private readonly restartedOwners = new Map<string, number>();
  /** Caps the info lines of instance writes made here (registered, updated, cancelled); the rest go to debug. */
  private readonly writeLines: LineBudget;

  constructor(
    private readonly components: RegistryComponents,
    private readonly init: RegistryInit,
  ) {
    this.peerId = init.peerId;
    this.log = components.logger.child({ component: 'registry' });
    this.writeLines = new LineBudget(components.clock, WRITE_LINES_PER_SECOND, (count, sinceMs) =>
      this.log.info({ count, sinceMs }, `instance writes logged at debug only (over ${WRITE_LINES_PER_SECOND} lines a second)`),
    );
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
      liveness: this.components.liveness,
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
    if (!exists) this.checkQuota(input);
    const alreadyOwned = exists && current.record.owner === this.peerId;
    const lease = ownLease(nowMs + input.leaseDurationMs, alreadyOwned ? current.ownedSinceMs : nowMs);
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
   * Renews the lease of a known instance on this peer. Not replicated. When the owner is down
   * (or the instance was hidden because of that), this peer takes the instance over.
   */
  heartbeat(key: InstanceKey): StoredInstance {
    const entry = this.find(key);
    if (!entry) {
      this.components.heartbeats?.heartbeat('unknown');
      throw notRegistered(key);
    }
    const view = this.leaseView();
    const renewUntilMs = view.nowMs + entry.record.leaseDurationMs;
    const { record } = entry;
    if (record.owner === this.peerId) {
      this.components.heartbeats?.heartbeat('renewed');
      this.components.renewals?.recordRenewal(view.nowMs);
      this.components.store.updateLease(entry, ownLease(renewUntilMs, entry.ownedSinceMs), !isServed(entry, view));
      return entry;
    }
    const restartedAtMs = this.restartedOwners.get(record.owner);
    if (restartedAtMs !== undefined && parseVersion(record.version).wallMs < restartedAtMs) {
      // The owner restarted since it wrote this record: it holds no lease a client renews.
      this.components.heartbeats?.heartbeat('takeover');
      return this.takeOver(entry, record, renewUntilMs, 'owner restarted');
    }
    const ownerUp = !entry.hidden && view.liveness.isUp(record.owner);
    if (ownerUp && !ownerLeaseEnding(entry, view.nowMs)) {
      this.components.heartbeats?.heartbeat('relayed');
      this.components.store.updateLease(
        entry,
        { heardUntilMs: renewUntilMs, leaseExpiresAtMs: Math.max(entry.leaseExpiresAtMs, renewUntilMs) },
        false,
      );
      return entry;
    }
    this.components.heartbeats?.heartbeat('takeover');
    return this.takeOver(entry, record, renewUntilMs, ownerUp ? "owner's lease ends without this client" : 'owner down');
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
    this.log.info({ key: instanceKeyString(entry.record), owner: entry.record.owner }, 'instance hidden: its owner is down and its grace lease ran out');
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
      record.owner !== this.peerId && leaseRemainingMs > 0 && this.components.liveness.heldDown?.(record.owner) === true
        ? nowMs + this.ownerDownGraceMsOf(record)
        : 0;
    // Our own record coming back (a restart, a snapshot): we own it from now unless we already did.
    const ownedSinceMs =
      record.owner !== this.peerId ? 0 : current?.record.owner === this.peerId ? current.ownedSinceMs : nowMs;
    const lease: LocalLeaseState =
      record.deleted !== null
        ? NO_LEASE
        : {
            leaseExpiresAtMs: Math.max(nowMs + Math.max(0, leaseRemainingMs), heardUntilMs, keptMs, graceUntilMs),
            heardUntilMs,
            hidden: false,
            held: false,
            ownedSinceMs,
            reportedUntilMs: nowMs + Math.max(0, leaseRemainingMs),
          };
    store.write(record, lease, 'remote');
    this.log.debug({ key: instanceKeyString(record), version: record.version, deleted: record.deleted }, 'replicated write applied');
    return decision;
  }

  /**
   * Called when membership sees `peerId` go down: its instances get one grace period here (their
   * lease, or `ownerDownGraceMs` if longer), since this peer cannot tell a dead peer from one it
   * is cut off from.
   */
  ownerDown(peerId: string): void {
    const nowMs = this.components.clock.nowMs();
    let count = 0;
    for (const entry of this.components.store.entries()) {
      if (entry.record.owner !== peerId || entry.record.deleted !== null) continue;
      const graceUntilMs = nowMs + this.ownerDownGraceMsOf(entry.record);
      this.components.store.updateLease(
        entry,
        { leaseExpiresAtMs: Math.max(entry.leaseExpiresAtMs, entry.heardUntilMs, graceUntilMs) },
        false,
      );
      count += 1;
    }
    if (count > 0) this.log.warn({ owner: peerId, instances: count }, 'owner down: its instances get one grace period');
  }

  /** The grace a down owner's instance gets here: its lease, or `ownerDownGraceMs` if longer. */
  private ownerDownGraceMsOf(record: InstanceRecord): number {
    return Math.max(record.leaseDurationMs, this.init.ownerDownGraceMs ?? 0);
  }

  /**
   * Called when membership sees `peerId` start again: it lost its leases, and took back from
   * its start-up snapshot (or data dir) the instances it owned. A client that failed over here
   * while it was gone heartbeats this peer, not it: the next heartbeat here for such an
   * instance takes it over (see `heartbeat`), before the restarted owner's fresh lease runs
   * out and it evicts them. Only a heartbeat does: a takeover from what this peer heard before
   * would outvote a cancel made meanwhile on another peer.
   */
  ownerRestarted(peerId: string): void {
    this.restartedOwners.set(peerId, this.components.clock.nowMs());
  }

  /** Called when membership sees `peerId` come back: what was hidden for its sake is shown again. */
  ownerUp(peerId: string): void {
    for (const entry of this.components.store.entries()) {
      if (entry.record.owner === peerId && entry.hidden) {
        this.components.store.updateLease(entry, { hidden: false }, true);
      }
    }
  }

  /** The stored instance if it exists and is not a tombstone; hidden ones included. */
  find(key: InstanceKey): StoredInstance | undefined {
    const entry = this.components.store.get(key);
    return entry && entry.record.deleted === null ? entry : undefined;
  }

  /** Only local registrations are checked: replicated writes were accepted by their peer. */
  private checkQuota(key: InstanceKey): void {
    const quota = this.init.quota;
    if (!quota) return;
    const { store } = this.components;
    const inService = store.getService(key.namespace, key.service)?.liveCount ?? 0;
    if (inService >= quota.instancesPerServiceMax) {
      throw new RegistryError(
        'REG_ERR_QUOTA_EXCEEDED',
        `service ${key.service} in namespace ${key.namespace} already holds ${inService} instances, the most limits.instancesPerServiceMax allows: raise it, or cancel instances, to register more`,
      );
    }
    const inNamespace = store.liveCountOfNamespace(key.namespace);
    if (inNamespace >= quota.instancesPerNamespaceMax) {
      throw new RegistryError(
        'REG_ERR_QUOTA_EXCEEDED',
        `namespace ${key.namespace} already holds ${inNamespace} instances, the most limits.instancesPerNamespaceMax allows: raise it, or cancel instances, to register more`,
      );
    }
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
    const written = this.components.store.write(
      record,
      { ...ownLease(leaseUntilMs, nowMs), heardUntilMs: Math.max(entry.heardUntilMs, leaseUntilMs) },
      'local',
    );
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
  const { leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs, reportedUntilMs } = entry;
  return { leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs, reportedUntilMs };
}
