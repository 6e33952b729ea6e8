import type { Clock, TimerHandle } from '../clock/clock.js';
import { shuffled, type Rng } from '../clock/rng.js';
import type { Logger } from '../log/logger.js';
import { isTombstoneExpired } from '../registry/merge.js';
import type { Registry } from '../registry/registry.js';
import { renewalIntervalMs } from '../registry/lease-terms.js';
import type { ServiceEntries } from '../registry/store.js';
import { serviceKeyString, type StoredInstance } from '../registry/types.js';
import { heldAfterRestart, type PeerLiveness } from '../registry/visibility.js';
import { planEvictions, runCap } from './eviction-budget.js';
import type { EvictionSafety, HeldCounts } from './eviction-safety.js';
import type { OwnershipFigures } from './partition-guard.js';
import { expectedRenewals, hasRenewed } from './self-preservation.js';

/** What the reaper needs to know about the other peers. */
export interface MembershipView extends PeerLiveness {
  /** Since when `peerId` has been down from this peer's point of view; null while it is up. */
  downSinceMs(peerId: string): number | null;
  /** Ids of the peers that are up, this one included. */
  livePeerIds(): string[];
  /** True when `peerId` is in another region every known peer of which is down. */
  wholeRegionDown?(peerId: string): boolean;
}

/**
 * What the owner does before it evicts an instance whose lease ran out: asks the other peers
 * whether one of them hears its client (replication/lease-check.ts). Absent: evict at once.
 */
export interface ExpiryCheck {
  /**
   * Of `expired` (owned here, lease ended, no guard holding them), those cleared for eviction
   * now; the others stay served while the peers are asked. `answered` is called once the
   * peers have answered about the ones asked now, so that they are evicted without waiting
   * for the next interval.
   */
  clear(expired: readonly StoredInstance[], nowMs: number, answered: () => void): StoredInstance[];
}

export interface ReaperComponents {
  clock: Clock;
  rng: Rng;
  registry: Registry;
  membership: MembershipView;
  safety: EvictionSafety;
  logger: Logger;
  expiryCheck?: ExpiryCheck;
}

export interface ReaperInit {
  evictionIntervalMs: number;
  tombstoneTtlMs: number;
  /** How long an owner stays down before its expired instances are evicted for good. */
  orphanTimeoutMs: number;
  /** The configured heartbeat interval (instances may renew at their own; see lease-terms.ts). */
  heartbeatIntervalMs: number;
  renewalWindowMs: number;
}

/** What one run did; exposed for tests, metrics and `/v1/cluster`. */
export interface ReaperRun {
  atMs: number;
  evicted: number;
  orphansEvicted: number;
  hidden: number;
  tombstonesPurged: number;
  held: HeldCounts;
  /** Owned instances whose lease ran out, kept served while the other peers are asked whether they hear them. */
  checking: number;
}

/** The candidates and figures a reaper run found, before anything is done. */
export interface ReaperScan {
  /** Instances this peer owns whose lease ran out: evicted and replicated. */
  expiredOwned: StoredInstance[];
  /** Foreign instances whose owner is down and whose grace ran out: hidden here only. */
  expiredForeign: StoredInstance[];
  /** Hidden instances whose owner stayed down past `orphanTimeoutMs`: evicted for good by the sweeper. */
  orphans: StoredInstance[];
  /** Tombstones past their TTL: dropped. */
  expiredTombstones: StoredInstance[];
  /** Renewals expected in the renewal window from the instances this peer owns that were renewing. */
  expectedRenewals: number;
  /** Owned instances that renewed at least once (`hasRenewed`); the others are not expected to. */
  ownedInstances: number;
  /** Records that are not tombstones, and those of them whose owner is down. */
  ownership: OwnershipFigures;
  /** Served (not deleted, not hidden) instances per `namespace/service`, and in all. */
  serviceSizes: Map<string, number>;
  served: number;
}

export interface ScanContext {
  nowMs: number;
  selfId: string;
  membership: MembershipView;
  tombstoneTtlMs: number;
  orphanTimeoutMs: number;
  renewalWindowMs: number;
  heartbeatIntervalMs: number;
}

/**
 * Sorts every stored instance into what a reaper run has to do with it, and counts. Pure.
 * It runs every second over the whole registry, so it walks the services directly and keeps
 * per-instance work to a few comparisons (100,000 instances take a few milliseconds).
 */
export function scanLeases(services: Iterable<ServiceEntries>, context: ScanContext): ReaperScan {
  const { nowMs, selfId, membership, tombstoneTtlMs, orphanTimeoutMs, renewalWindowMs, heartbeatIntervalMs } = context;
  const scan: ReaperScan = {
    expiredOwned: [],
    expiredForeign: [],
    orphans: [],
    expiredTombstones: [],
    expectedRenewals: 0,
    ownedInstances: 0,
    ownership: { records: 0, downOwned: 0, downRegionOwned: 0 },
    serviceSizes: new Map(),
    served: 0,
  };
  const isSweeper = orphanSweeper(membership.livePeerIds()) === selfId;
  // Owners are few: ask membership once per owner and run.
  const downSince = new Map<string, number | null>();
  const wholeRegionDown = new Map<string, boolean>();
  for (const service of services) {
    let size = 0;
    for (const entry of service.instances.values()) {
      const { record } = entry;
      if (record.deleted !== null) {
        if (isTombstoneExpired(record, nowMs, tombstoneTtlMs)) scan.expiredTombstones.push(entry);
        continue;
      }
      const own = record.owner === selfId;
      let ownerDownSinceMs: number | null = null;
      scan.ownership.records += 1;
      if (own) {
        // Only instances that were renewing are expected to go on (self-preservation.ts).
        if (hasRenewed(entry)) {
          scan.ownedInstances += 1;
          scan.expectedRenewals += expectedRenewals(entry.ownedSinceMs, nowMs, renewalWindowMs, renewalIntervalMs(record, heartbeatIntervalMs));
        }
      } else {
        const owner = record.owner;
        let known = downSince.get(owner);
        if (known === undefined) {
          known = membership.downSinceMs(owner);
          downSince.set(owner, known);
          wholeRegionDown.set(owner, known !== null && (membership.wholeRegionDown?.(owner) ?? false));
        }
        ownerDownSinceMs = known;
        if (ownerDownSinceMs !== null) {
          scan.ownership.downOwned += 1;
          if (wholeRegionDown.get(owner)) scan.ownership.downRegionOwned += 1;
        }
      }
      if (!entry.hidden) size += 1;
      if (entry.leaseExpiresAtMs > nowMs) continue;
      if (own) {
        scan.expiredOwned.push(entry);
      } else if (ownerDownSinceMs !== null) {
        if (!entry.hidden) scan.expiredForeign.push(entry);
        else if (isSweeper && nowMs - ownerDownSinceMs >= orphanTimeoutMs) scan.orphans.push(entry);
      }
    }
    if (size > 0) scan.serviceSizes.set(serviceKeyString(service.namespace, service.service), size);
    scan.served += size;
  }
  return scan;
}

/** The one live peer that evicts orphans for good: the lowest id, the same choice on every peer. */
export function orphanSweeper(livePeerIds: readonly string[]): string | undefined {
  return [...livePeerIds].sort()[0];
}

const serviceOf = (entry: StoredInstance) => serviceKeyString(entry.record.namespace, entry.record.service);

/**
 * Runs every `evictionIntervalMs`: evicts this peer's expired instances (replicated deletes),
 * hides foreign ones whose owner is down and whose grace ran out (local only), sweeps orphans
 * and drops expired tombstones, within the eviction guards: self-preservation stops owned
 * evictions, the partition guard holds down owners' instances, and the per-service and
 * per-run caps bound what one window and one run may evict (in random order).
 */
export class Reaper {
  private timer: TimerHandle | undefined;
  private readonly log: Logger;
  /** Whether the partition guard held down owners' instances at the last run. */
  private holdingDownOwners = false;
  lastRun: ReaperRun | undefined;

  constructor(
    private readonly components: ReaperComponents,
    private readonly init: ReaperInit,
  ) {
    this.log = components.logger.child({ component: 'reaper' });
  }

  start(): void {
    this.timer ??= this.components.clock.setInterval(() => this.runOnce(), this.init.evictionIntervalMs);
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** The peers answered a lease check: what they do not hear is evicted now, not an interval later. */
  private answered(): void {
    if (this.timer) this.runOnce();
  }

  /** One pass over the registry; synchronous, so nothing changes under it. */
  runOnce(): ReaperRun {
    const { clock, registry, membership, rng, safety } = this.components;
    const nowMs = clock.nowMs();
    registry.flushLogSummary();
    const scan = scanLeases(registry.store.allServices(), { nowMs, selfId: registry.peerId, membership, ...this.init });
    const guards = safety.assess(nowMs, scan.expectedRenewals, scan.ownedInstances, scan.ownership);
    const held: HeldCounts = { selfPreservation: 0, partitionGuard: 0, serviceCap: 0, runCap: 0 };

    for (const entry of scan.expiredTombstones) registry.purge(entry);
    let hidden = 0;
    if (guards.holdDownOwners) held.partitionGuard += scan.expiredForeign.length;
    else if (this.holdingDownOwners && !safety.partitionGuardSwitchedOff) {
      // The partition guard lifted by itself: the share of down owners fell below the ratio,
      // most often because the peers cut off with this one are coming back one by one. What it
      // held gets one grace period from now, as when an owner goes down, rather than being
      // hidden at once: the owners not seen back yet may be a moment behind (found by chaos:
      // seed 8675349, 5 peers, a peer hid five instances of an owner it saw back 140 ms later,
      // while their client kept heartbeating it). An operator's release hides them at once.
      for (const entry of scan.expiredForeign) registry.graceAgain(entry);
    } else {
      for (const entry of scan.expiredForeign) registry.hide(entry);
      hidden = scan.expiredForeign.length;
    }
    this.holdingDownOwners = guards.holdDownOwners;

    const candidates: StoredInstance[] = [];
    let checking = 0;
    if (guards.suspendOwnedExpiry) held.selfPreservation = scan.expiredOwned.length;
    else {
      // An instance this peer took back at a restart (from its data dir or a snapshot) and has
      // not heard since may be heartbeating a peer it cannot reach: held by the same rule the
      // reads apply (see heldAfterRestart), so that no read sees it unserved before this run.
      const expired: StoredInstance[] = [];
      for (const entry of shuffled(rng, scan.expiredOwned)) {
        if (heldAfterRestart(entry, nowMs, membership)) {
          held.partitionGuard += 1;
          registry.hold(entry);
        } else expired.push(entry);
      }
      // Before evicting, the other peers are asked whether one of them hears the client; the
      // instances asked about stay served (held) until they answer.
      const cleared = this.components.expiryCheck?.clear(expired, nowMs, () => this.answered()) ?? expired;
      if (cleared.length < expired.length) {
        const evictable = new Set(cleared);
        for (const entry of expired) {
          if (evictable.has(entry)) continue;
          registry.hold(entry);
          checking += 1;
        }
      }
      candidates.push(...cleared);
    }
    const orphans = guards.holdDownOwners ? [] : scan.orphans;
    candidates.push(...orphans);
    const plan = planEvictions(candidates, serviceOf, safety.serviceBudgets(nowMs, scan.serviceSizes), {
      serviceMaxRatio: safety.serviceMaxRatio,
      runMax: runCap(scan.served, safety.runMaxRatio),
    });
    let orphansEvicted = 0;
    for (const entry of plan.evict) {
      const orphan = entry.record.owner !== registry.peerId;
      registry.evict(entry, orphan ? `orphan: owner ${entry.record.owner} down` : 'lease expired');
      safety.recordEviction(serviceOf(entry), nowMs);
      if (orphan) orphansEvicted += 1;
    }
    const capped = new Map<string, number>();
    for (const entry of plan.heldByService) capped.set(serviceOf(entry), (capped.get(serviceOf(entry)) ?? 0) + 1);
    for (const entry of [...plan.heldByService, ...plan.heldByRun]) registry.hold(entry);
    held.serviceCap = plan.heldByService.length;
    held.runCap = plan.heldByRun.length;
    safety.recordHeld(nowMs, held, capped);

    const run: ReaperRun = {
      atMs: nowMs,
      evicted: plan.evict.length - orphansEvicted,
      orphansEvicted,
      hidden,
      tombstonesPurged: scan.expiredTombstones.length,
      held,
      checking,
    };
    if (plan.evict.length > 0 || held.serviceCap + held.runCap > 0) this.log.debug({ ...run }, 'reaper run');
    this.lastRun = run;
    return run;
  }
}
