import type { Clock } from './clock/clock.js';
import { HybridClock } from './clock/hlc.js';
import type { Rng } from './clock/rng.js';
import type { RegistryConfig } from './config/load.js';
import { Reaper, type MembershipView } from './lease/reaper.js';
import type { Logger } from './log/logger.js';
import { nodeDisk, type Disk } from './persistence/disk.js';
import { inMemoryDurability, type Durability } from './persistence/durability.js';
import type { LockIdentity } from './persistence/lock.js';
import { Persistence } from './persistence/persistence.js';
import { Registry } from './registry/registry.js';
import { InstanceStore } from './registry/store.js';

/** Collaborators a peer is built from: everything that touches time, chance or the outside. */
export interface NodeComponents {
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** The file system under the data dir; tests pass a simulated one. */
  disk?: Disk;
  /** Who holds the data dir lock; defaults to this process (tests play several processes in one). */
  processIdentity?: LockIdentity;
}

/** Number of anti-entropy digest buckets (see DESIGN.md, Replication). */
export const DIGEST_BUCKETS = 4096;

/** Membership of a cluster of one: this peer is the only one, always up. */
function soloMembership(selfId: string, startedAtMs: number): MembershipView {
  return {
    isUp: (peerId) => peerId === selfId,
    downSinceMs: (peerId) => (peerId === selfId ? null : startedAtMs),
    livePeerIds: () => [selfId],
  };
}

/**
 * One registry peer without its HTTP server: the store, the registry operations, the lease
 * reaper and (later) replication and membership, wired from one config. Tests build many of
 * these in one process with a fake clock; main.ts builds one with the system clock.
 */
export class RegistryNode {
  readonly store: InstanceStore;
  readonly hlc: HybridClock;
  readonly registry: Registry;
  readonly reaper: Reaper;
  readonly membership: MembershipView;
  /** The data dir (null without one: purely in memory). */
  readonly persistence: Persistence | null;
  /** What the write routes wait on before answering. */
  readonly durability: Durability;
  private readyFlag = false;

  constructor(
    readonly components: NodeComponents,
    readonly config: RegistryConfig,
  ) {
    const { clock, logger } = components;
    const log = logger.child({ peer: config.self.id });
    this.store = new InstanceStore(DIGEST_BUCKETS);
    this.hlc = new HybridClock(clock, config.self.id);
    this.membership = soloMembership(config.self.id, clock.nowMs());
    this.registry = new Registry(
      { clock, hlc: this.hlc, store: this.store, liveness: this.membership, logger: log },
      { peerId: config.self.id, tombstoneTtlMs: config.cluster.tombstoneTtlMs },
    );
    this.reaper = new Reaper(
      { clock, rng: components.rng, registry: this.registry, membership: this.membership, logger: log },
      {
        evictionIntervalMs: config.cluster.evictionIntervalMs,
        tombstoneTtlMs: config.cluster.tombstoneTtlMs,
        orphanTimeoutMs: config.cluster.orphanTimeoutMs,
      },
    );
    this.persistence =
      config.dataDir === null
        ? null
        : new Persistence(
            {
              clock,
              logger: log,
              store: this.store,
              hlc: this.hlc,
              disk: components.disk ?? nodeDisk,
              ...(components.processIdentity ? { identity: components.processIdentity } : {}),
            },
            { ...config.storage, dataDir: config.dataDir, peerId: config.self.id, tombstoneTtlMs: config.cluster.tombstoneTtlMs },
          );
    this.durability = this.persistence ?? inMemoryDurability;
  }

  /** True once the start-up sync is done and the peer may serve (see `/readyz`). */
  get ready(): boolean {
    return this.readyFlag;
  }

  async start(): Promise<void> {
    // The data dir is loaded (restored instances get a grace lease) before the reaper looks at anything.
    await this.persistence?.open();
    this.reaper.start();
    this.readyFlag = true;
  }

  async stop(): Promise<void> {
    this.readyFlag = false;
    this.reaper.stop();
    await this.persistence?.close();
  }
}
