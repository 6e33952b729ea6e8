import { isTombstoneExpired } from '../registry/merge.js';
import { renewalIntervalMs } from '../registry/lease-terms.js';
import type { ServiceEntries } from '../registry/store.js';
import { serviceKeyString, type StoredInstance } from '../registry/types.js';
import type { PeerLiveness } from '../registry/visibility.js';
import type { OwnershipFigures } from './partition-guard.js';
import { expectedRenewals, hasRenewed } from './self-preservation.js';
import type { TurnPace } from './turn-pace.js';

/** What the reaper needs to know about the other peers. */
export interface MembershipView extends PeerLiveness {
  /** Since when `peerId` has been down from this peer's point of view; null while it is up. */
  downSinceMs(peerId: string): number | null;
  /** Ids of the peers that are up, this one included. */
  livePeerIds(): string[];
  /** True when `peerId` is in another region every known peer of which is down. */
  wholeRegionDown?(peerId: string): boolean;
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

/** The four lists of candidates a scan fills; an instance is in at most one. */
export type LeaseBucket = 'expiredOwned' | 'expiredForeign' | 'orphans' | 'expiredTombstones';
const BUCKETS: readonly LeaseBucket[] = ['expiredOwned', 'expiredForeign', 'orphans', 'expiredTombstones'];

export interface ScanContext {
  nowMs: number;
  selfId: string;
  membership: MembershipView;
  /**
   * True while the registry gives a down owner's instances their grace, in turns
   * (`Registry.graceUnderway`): until it is done the owner counts as up, so nothing of it is
   * hidden before it has its grace. Absent: never.
   */
  graceUnderway?(owner: string): boolean;
  tombstoneTtlMs: number;
  orphanTimeoutMs: number;
  renewalWindowMs: number;
  heartbeatIntervalMs: number;
}

/** The one live peer that evicts orphans for good: the lowest id, the same choice on every peer. */
export function orphanSweeper(livePeerIds: readonly string[]): string | undefined {
  return [...livePeerIds].sort()[0];
}

/**
 * The rule that puts an instance in a bucket, at one time and membership: used by the scan,
 * and again by the reaper just before it acts on a candidate of a sliced scan (so both ask
 * the same question). Owners are few: membership is asked once per owner.
 */
export class LeaseRule {
  readonly nowMs: number;
  private readonly isSweeper: boolean;
  private readonly downSince = new Map<string, number | null>();
  private readonly regionDown = new Map<string, boolean>();

  constructor(private readonly context: ScanContext) {
    this.nowMs = context.nowMs;
    this.isSweeper = orphanSweeper(context.membership.livePeerIds()) === context.selfId;
  }

  /** Since when a foreign owner has been down (null while up). */
  ownerDownSinceMs(owner: string): number | null {
    let known = this.downSince.get(owner);
    if (known === undefined) {
      known = this.context.graceUnderway?.(owner) === true ? null : this.context.membership.downSinceMs(owner);
      this.downSince.set(owner, known);
      this.regionDown.set(owner, known !== null && (this.context.membership.wholeRegionDown?.(owner) ?? false));
    }
    return known;
  }

  /** Whether a down owner's whole region is down (after `ownerDownSinceMs` asked about it). */
  ownerRegionDown(owner: string): boolean {
    return this.regionDown.get(owner) ?? false;
  }

  /** Which candidates' list `entry` belongs in now, or null when the reaper has nothing to do with it. */
  bucketOf(entry: StoredInstance): LeaseBucket | null {
    const { record } = entry;
    const { nowMs, context } = this;
    if (record.deleted !== null) return isTombstoneExpired(record, nowMs, context.tombstoneTtlMs) ? 'expiredTombstones' : null;
    if (entry.leaseExpiresAtMs > nowMs) return null;
    if (record.owner === context.selfId) return 'expiredOwned';
    const downSinceMs = this.ownerDownSinceMs(record.owner);
    if (downSinceMs === null) return null;
    if (!entry.hidden) return 'expiredForeign';
    return this.isSweeper && nowMs - downSinceMs >= context.orphanTimeoutMs ? 'orphans' : null;
  }
}

function emptyScan(): ReaperScan {
  return {
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
}

/**
 * A scan that can stop after a number of entries and go on later (the reaper yields the event
 * loop between slices of a large registry). It holds the store's own iterators: an entry
 * written meanwhile is seen in its new form if the scan has not passed its key yet, a key
 * added is seen, a key removed is skipped; the candidates are re-checked before anything is
 * done (see `stillCandidates`). `step(Infinity)` is the whole scan at once.
 */
export class LeaseScan {
  readonly result = emptyScan();
  readonly rule: LeaseRule;
  private readonly services: Iterator<ServiceEntries>;
  private service: ServiceEntries | undefined;
  private instances: IterableIterator<StoredInstance> | undefined;
  /** Served instances of `service` counted so far. */
  private size = 0;

  constructor(
    services: Iterable<ServiceEntries>,
    private readonly context: ScanContext,
  ) {
    this.rule = new LeaseRule(context);
    this.services = services[Symbol.iterator]();
  }

  /**
   * Visits at most `maxEntries` more entries; true once every entry has been visited. It runs
   * every second over the whole registry, so per-entry work stays a few comparisons and
   * additions; membership is asked only per owner, and only for foreign records.
   */
  step(maxEntries: number): boolean {
    const { result, rule } = this;
    const { nowMs, selfId, renewalWindowMs, heartbeatIntervalMs } = this.context;
    const ownership = result.ownership;
    let left = maxEntries;
    for (;;) {
      if (!this.instances) {
        const next = this.services.next();
        if (next.done) return true;
        this.service = next.value;
        this.instances = next.value.instances.values();
        this.size = 0;
      }
      let size = this.size;
      let finished = true;
      // A Map iterator has no `return`: leaving this loop early keeps its place for the next step.
      for (const entry of this.instances) {
        const record = entry.record;
        if (record.deleted === null) {
          ownership.records += 1;
          if (record.owner === selfId) {
            // Only instances that were renewing are expected to go on (self-preservation.ts).
            if (hasRenewed(entry)) {
              result.ownedInstances += 1;
              result.expectedRenewals += expectedRenewals(entry.ownedSinceMs, nowMs, renewalWindowMs, renewalIntervalMs(record, heartbeatIntervalMs));
            }
          } else if (rule.ownerDownSinceMs(record.owner) !== null) {
            ownership.downOwned += 1;
            if (rule.ownerRegionDown(record.owner)) ownership.downRegionOwned += 1;
          }
          if (!entry.hidden) size += 1;
        }
        if (entry.leaseExpiresAtMs <= nowMs || record.deleted !== null) {
          const bucket = rule.bucketOf(entry);
          if (bucket !== null) result[bucket].push(entry);
        }
        if (--left === 0) {
          finished = false;
          break;
        }
      }
      this.size = size;
      if (!finished) return false;
      const service = this.service!;
      if (size > 0) result.serviceSizes.set(serviceKeyString(service.namespace, service.service), size);
      result.served += size;
      this.instances = undefined;
    }
  }
}

/**
 * Sorts every stored instance into what a reaper run has to do with it, and counts: the whole
 * scan at once. Pure.
 */
export function scanLeases(services: Iterable<ServiceEntries>, context: ScanContext): ReaperScan {
  const scan = new LeaseScan(services, context);
  scan.step(Infinity);
  return scan.result;
}

/**
 * The scan of a sliced run as it stands when the reaper acts on it: each candidate kept only
 * if it is still the store's entry for its key (a write replaces the entry object: register,
 * update, replicated write, takeover, delete) and `rule`, the rule at this time and
 * membership, still puts it in the same bucket (a heartbeat renews the entry in place, an
 * owner may be back). Step by step: it yields whenever `pace` says a turn's share is done (a
 * tenth of 1,000,000 expiring together took 28 ms in one turn: bench/findings.md, 2026-12-06
 * evening). The figures stay those of the slices: see the reaper's `run`.
 */
export function* stillCandidates(scan: ReaperScan, rule: LeaseRule, isCurrent: (entry: StoredInstance) => boolean, pace: TurnPace): Generator<void, ReaperScan> {
  const checked: ReaperScan = { ...scan };
  for (const bucket of BUCKETS) {
    const kept: StoredInstance[] = [];
    for (const entry of scan[bucket]) {
      if (isCurrent(entry) && rule.bucketOf(entry) === bucket) kept.push(entry);
      if (pace.spent()) yield;
    }
    checked[bucket] = kept;
  }
  return checked;
}
