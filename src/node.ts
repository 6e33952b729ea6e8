import type { Clock } from './clock/clock.js';
import { HybridClock } from './clock/hlc.js';
import type { Rng } from './clock/rng.js';
import type { RegistryConfig } from './config/load.js';
import { EvictionSafety } from './lease/eviction-safety.js';
import { Reaper } from './lease/reaper.js';
import type { Logger } from './log/logger.js';
import { Membership } from './membership/membership.js';
import { nodeDisk, type Disk } from './persistence/disk.js';
import { inMemoryDurability, type Durability } from './persistence/durability.js';
import type { LockIdentity } from './persistence/lock.js';
import { Persistence } from './persistence/persistence.js';
import { Registry, type HeartbeatOutcome } from './registry/registry.js';
import { InstanceStore } from './registry/store.js';
import { AntiEntropy } from './replication/anti-entropy.js';
import { bootstrap, type BootstrapResult } from './replication/bootstrap.js';
import { Inbox } from './replication/inbox.js';
import { PeerService } from './replication/peer-service.js';
import { Replicator } from './replication/replicator.js';
import type { PeerDescriptor, PeerTransport } from './transport/transport.js';
import { WatchHub } from './watch/hub.js';
import { ServiceViews } from './views/service-views.js';
import { clusterStatus, type ClusterStatus } from './cluster-status.js';

/** Collaborators a peer is built from: everything that touches time, chance or the outside. */
export interface NodeComponents {
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** How this peer calls the others. */
  transport: PeerTransport;
  /** The file system under the data dir; tests pass a simulated one. */
  disk?: Disk;
  /** Who holds the data dir lock; defaults to this process (tests play several processes in one). */
  processIdentity?: LockIdentity;
}

/** Number of anti-entropy digest buckets; the same on every peer (see DESIGN.md, Replication). */
export const DIGEST_BUCKETS = 4096;
/** Digest buckets per start-up snapshot page (16 pages in all). */
const SNAPSHOT_BUCKETS_PER_PAGE = 256;

/**
 * One registry peer without its HTTP server: the store and registry operations, the lease
 * reaper, membership, replication (outbound channels, inbox, anti-entropy) and the start-up
 * sync, all wired from one config. Tests build many of these in one process on a fake clock
 * and a simulated network; src/peer.ts builds one with the system clock and HTTP.
 */
export class RegistryNode {
  /** The clock and the transport it was built with (`components`), for what reads them from the node. */
  readonly clock: Clock;
  readonly transport: PeerTransport;
  readonly store: InstanceStore;
  readonly hlc: HybridClock;
  readonly registry: Registry;
  readonly reaper: Reaper;
  /** Self-preservation, the partition guard and the eviction caps. */
  readonly safety: EvictionSafety;
  readonly membership: Membership;
  readonly inbox: Inbox;
  readonly replicator: Replicator;
  readonly antiEntropy: AntiEntropy;
  /** Watch streams and long polls. */
  readonly watch: WatchHub;
  /** The read layer: per-service served views and their shared encodings (every protocol reads these). */
  readonly views: ServiceViews;
  /** What the peer routes (and the simulated network) call. */
  readonly peerApi: PeerService;
  /** The data dir (null without one: purely in memory). */
  readonly persistence: Persistence | null;
  /** What the write routes wait on before answering. */
  readonly durability: Durability;
  /** Heartbeats received since start, by outcome (read by the metrics; an integer bump per heartbeat). */
  readonly heartbeats: Record<HeartbeatOutcome, number> = { renewed: 0, relayed: 0, takeover: 0, unknown: 0 };
  readonly startedAtMs: number;
  bootstrapResult: BootstrapResult | undefined;
  private readyFlag = false;
  private readonly log: Logger;

  constructor(
    readonly components: NodeComponents,
    readonly config: RegistryConfig,
  ) {
    const { clock, rng, transport } = components;
    this.clock = clock;
    this.transport = transport;
    const { cluster, self } = config;
    const logger = components.logger.child({ peer: self.id });
    this.log = logger;
    this.startedAtMs = clock.nowMs();
    this.store = new InstanceStore(DIGEST_BUCKETS);
    this.hlc = new HybridClock(clock, self.id);
    this.membership = new Membership(
      { clock, rng, transport, logger },
      {
        self,
        incarnation: Math.floor(rng.next() * 2 ** 48).toString(16).padStart(12, '0'),
        seeds: config.seeds,
        probeIntervalMs: cluster.probeIntervalMs,
        probeTimeoutMs: cluster.probeTimeoutMs,
        indirectProbes: cluster.indirectProbes,
        suspicionTimeoutMs: cluster.suspicionTimeoutMs,
      },
    );
    const membership = this.membership;
    const reportContact = (peerId: string) => membership.reportContact(peerId);
    const safety = new EvictionSafety({ ...cluster, startedAtMs: this.startedAtMs }, logger);
    this.safety = safety;
    this.registry = new Registry(
      {
        clock,
        hlc: this.hlc,
        store: this.store,
        liveness: membership,
        logger,
        guards: () => safety.guards(),
        renewals: safety.renewals,
        regionOfZone: (zone) => this.regionOfZone(zone),
        heartbeats: { heartbeat: (outcome) => void (this.heartbeats[outcome] += 1) },
      },
      {
        peerId: self.id,
        tombstoneTtlMs: cluster.tombstoneTtlMs,
        ownerDownGraceMs: cluster.ownerDownGraceMs,
        quota: {
          instancesPerServiceMax: config.limits.instancesPerServiceMax,
          instancesPerNamespaceMax: config.limits.instancesPerNamespaceMax,
        },
      },
    );
    this.reaper = new Reaper(
      { clock, rng, registry: this.registry, membership, safety, logger },
      {
        evictionIntervalMs: cluster.evictionIntervalMs,
        tombstoneTtlMs: cluster.tombstoneTtlMs,
        orphanTimeoutMs: cluster.orphanTimeoutMs,
        heartbeatIntervalMs: cluster.heartbeatIntervalMs,
        renewalWindowMs: cluster.renewalWindowMs,
      },
    );
    this.inbox = new Inbox(this.registry, clock, logger);
    this.replicator = new Replicator(
      { clock, rng, registry: this.registry, transport, logger, isUp: (id) => membership.isUp(id), reportContact },
      {
        selfId: self.id,
        batchMaxRecords: cluster.replicationBatchMaxRecords,
        batchDelayMs: cluster.replicationBatchDelayMs,
        selfRegion: self.region,
        crossRegionBatchDelayMs: cluster.crossRegionBatchDelayMs,
        queueMaxRecords: cluster.replicationQueueMaxRecords,
        concurrency: cluster.replicationConcurrency,
        callTimeoutMs: cluster.peerCallTimeoutMs,
        retryBaseMs: cluster.replicationRetryBaseMs,
        retryMaxMs: cluster.replicationRetryMaxMs,
      },
    );
    this.antiEntropy = new AntiEntropy(
      {
        clock,
        rng,
        registry: this.registry,
        inbox: this.inbox,
        transport,
        logger,
        livePeers: () => membership.list().filter((m) => m.state !== 'down').map((m) => m.descriptor),
        reportContact,
      },
      {
        selfId: self.id,
        selfRegion: self.region,
        intervalMs: cluster.antiEntropyIntervalMs,
        crossRegionIntervalMs: cluster.crossRegionAntiEntropyIntervalMs,
        callTimeoutMs: cluster.peerCallTimeoutMs,
        maxBucketsPerRound: cluster.antiEntropyMaxBucketsPerRound,
        pushBatchMaxRecords: cluster.replicationBatchMaxRecords,
      },
    );
    this.peerApi = new PeerService({ membership, inbox: this.inbox, antiEntropy: this.antiEntropy });
    this.views = new ServiceViews({ clock, store: this.store, leaseView: () => this.registry.leaseView() });
    this.watch = new WatchHub(
      { clock, rng, registry: this.registry, logger, views: this.views },
      { coalesceMs: cluster.watchCoalesceMs, maxWatchers: cluster.watchMaxWatchers },
    );
    this.persistence =
      config.dataDir === null
        ? null
        : new Persistence(
            {
              clock,
              logger,
              store: this.store,
              hlc: this.hlc,
              disk: components.disk ?? nodeDisk,
              ...(components.processIdentity ? { identity: components.processIdentity } : {}),
            },
            { ...config.storage, dataDir: config.dataDir, peerId: self.id, tombstoneTtlMs: cluster.tombstoneTtlMs },
          );
    this.durability = this.persistence ?? inMemoryDurability;
    membership.subscribe({
      joined: (peer) => this.replicator.addPeer(peer),
      down: (peerId) => this.registry.ownerDown(peerId),
      up: (peerId) => this.peerCameBack(peerId),
      recovered: (peerId) => this.peerRecovered(peerId),
      restarted: (peerId) => this.registry.ownerRestarted(peerId),
    });
  }

  /** True once the start-up sync is done and the peer may serve (see `/readyz`). */
  get ready(): boolean {
    return this.readyFlag;
  }

  /** Starts probing and replicating, syncs from a live peer, then starts the reaper and anti-entropy. */
  async start(): Promise<void> {
    // The data dir is loaded first (restored instances get a grace lease), then the peer
    // syncs with the others: anti-entropy brings it up to date.
    await this.persistence?.open();
    this.membership.start();
    this.replicator.start();
    this.bootstrapResult = await bootstrap(
      this.membership.list().map((member) => member.descriptor),
      {
        clock: this.components.clock,
        rng: this.components.rng,
        transport: this.components.transport,
        inbox: this.inbox,
        antiEntropy: this.antiEntropy,
        logger: this.log,
        learn: (members) => this.membership.learn(members),
        reportContact: (peerId) => this.membership.reportContact(peerId),
      },
      { selfId: this.config.self.id, callTimeoutMs: this.config.cluster.peerCallTimeoutMs, bucketsPerPage: SNAPSHOT_BUCKETS_PER_PAGE, startedAtMs: this.startedAtMs },
    );
    this.reaper.start();
    this.antiEntropy.start();
    this.readyFlag = true;
  }

  /** Stops every timer and waits for replication batches in flight. */
  async stop(): Promise<void> {
    this.readyFlag = false;
    this.watch.closeAll();
    this.views.close();
    this.antiEntropy.stop();
    this.membership.stop();
    this.reaper.stop();
    await this.replicator.stop();
    await this.persistence?.close();
  }

  /** The region of a zone, as the peers' configuration says (this peer and every peer it knows). */
  readonly regionOfZone = (zone: string): string | undefined => {
    if (zone === this.config.self.zone) return this.config.self.region;
    return this.membership.list().find((member) => member.descriptor.zone === zone)?.descriptor.region;
  };

  /** Everything `/v1/cluster` shows. */
  status(): ClusterStatus {
    return clusterStatus(this);
  }

  private peerCameBack(peerId: string): void {
    this.registry.ownerUp(peerId);
    this.peerRecovered(peerId);
  }

  /**
   * Contact with a peer is back (after it was down or only suspect): send what waited at once
   * and compare, without waiting for the channel's backoff, the next anti-entropy round or a
   * call still stuck in the cut until its timeout.
   */
  private peerRecovered(peerId: string): void {
    this.replicator.resume(peerId);
    const peer: PeerDescriptor | undefined = this.membership.get(peerId)?.descriptor;
    if (peer) void this.antiEntropy.syncWith(peer, { evenIfBusy: true });
  }
}
