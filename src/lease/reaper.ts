import type { Clock, TimerHandle } from '../clock/clock.js';
import { shuffled, type Rng } from '../clock/rng.js';
import type { Logger } from '../log/logger.js';
import { isTombstoneExpired } from '../registry/merge.js';
import type { Registry } from '../registry/registry.js';
import type { StoredInstance } from '../registry/types.js';
import type { PeerLiveness } from '../registry/visibility.js';

/** What the reaper needs to know about the other peers. */
export interface MembershipView extends PeerLiveness {
  /** Since when `peerId` has been down from this peer's point of view; null while it is up. */
  downSinceMs(peerId: string): number | null;
  /** Ids of the peers that are up, this one included. */
  livePeerIds(): string[];
}

export interface ReaperComponents {
  clock: Clock;
  rng: Rng;
  registry: Registry;
  membership: MembershipView;
  logger: Logger;
}

export interface ReaperInit {
  evictionIntervalMs: number;
  tombstoneTtlMs: number;
  /** How long an owner stays down before its expired instances are evicted for good. */
  orphanTimeoutMs: number;
}

/** What one run did; exposed for tests, metrics and `/v1/cluster`. */
export interface ReaperRun {
  atMs: number;
  evicted: number;
  orphansEvicted: number;
  hidden: number;
  tombstonesPurged: number;
}

/** The candidates a reaper run found, before any eviction is done. */
export interface ReaperScan {
  /** Instances this peer owns whose lease ran out: evicted and replicated. */
  expiredOwned: StoredInstance[];
  /** Foreign instances whose owner is down and whose grace ran out: hidden here only. */
  expiredForeign: StoredInstance[];
  /** Hidden instances whose owner stayed down past `orphanTimeoutMs`: evicted for good by the sweeper. */
  orphans: StoredInstance[];
  /** Tombstones past their TTL: dropped. */
  expiredTombstones: StoredInstance[];
}

/** Sorts every stored instance into what a reaper run has to do with it. Pure. */
export function scanLeases(
  entries: Iterable<StoredInstance>,
  nowMs: number,
  selfId: string,
  membership: MembershipView,
  init: Pick<ReaperInit, 'tombstoneTtlMs' | 'orphanTimeoutMs'>,
): ReaperScan {
  const scan: ReaperScan = { expiredOwned: [], expiredForeign: [], orphans: [], expiredTombstones: [] };
  const isSweeper = orphanSweeper(membership.livePeerIds()) === selfId;
  for (const entry of entries) {
    const { record } = entry;
    if (record.deleted !== null) {
      if (isTombstoneExpired(record, nowMs, init.tombstoneTtlMs)) scan.expiredTombstones.push(entry);
      continue;
    }
    if (entry.leaseExpiresAtMs > nowMs) continue;
    if (record.owner === selfId) {
      scan.expiredOwned.push(entry);
      continue;
    }
    const downSinceMs = membership.downSinceMs(record.owner);
    if (downSinceMs === null) continue;
    if (!entry.hidden) scan.expiredForeign.push(entry);
    else if (isSweeper && nowMs - downSinceMs >= init.orphanTimeoutMs) scan.orphans.push(entry);
  }
  return scan;
}

/** The one live peer that evicts orphans for good: the lowest id, the same choice on every peer. */
export function orphanSweeper(livePeerIds: readonly string[]): string | undefined {
  return [...livePeerIds].sort()[0];
}

/**
 * Runs every `evictionIntervalMs`: evicts this peer's expired instances (replicated deletes),
 * hides foreign ones whose owner is down and whose grace ran out (local only), sweeps orphans
 * and drops expired tombstones. Evictions happen in random order.
 */
export class Reaper {
  private timer: TimerHandle | undefined;
  private readonly log: Logger;
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

  /** One pass over the registry; synchronous, so nothing changes under it. */
  runOnce(): ReaperRun {
    const { clock, registry, membership, rng } = this.components;
    const nowMs = clock.nowMs();
    const scan = scanLeases(registry.store.entries(), nowMs, registry.peerId, membership, this.init);
    for (const entry of scan.expiredTombstones) registry.store.purge(entry.record);
    for (const entry of scan.expiredForeign) registry.hide(entry);
    for (const entry of shuffled(rng, scan.expiredOwned)) registry.evict(entry, 'lease expired');
    for (const entry of scan.orphans) registry.evict(entry, `orphan: owner ${entry.record.owner} down`);
    const run: ReaperRun = {
      atMs: nowMs,
      evicted: scan.expiredOwned.length,
      orphansEvicted: scan.orphans.length,
      hidden: scan.expiredForeign.length,
      tombstonesPurged: scan.expiredTombstones.length,
    };
    if (run.evicted + run.orphansEvicted > 0) this.log.debug({ ...run }, 'reaper run');
    this.lastRun = run;
    return run;
  }
}
