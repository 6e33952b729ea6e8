import { createAdapterPorts } from './adapters/ports.js';
import type { AdapterPorts } from './adapters/contract.js';
import { applicationOf } from './app/application.js';
import type { Clock } from './clock/clock.js';
import { HybridClock } from './clock/hlc.js';
import type { Rng } from './clock/rng.js';
import type { RegistryConfig } from './config/load.js';
import { EvictionSafety } from './lease/eviction-safety.js';
import { OWNERSHIP_RULES } from './lease/ownership.js';
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
import { LeaseCheck } from './replication/lease-check.js';
import { PeerService } from './replication/peer-service.js';
import { Replicator } from './replication/replicator.js';
import type { PeerDescriptor, PeerTransport } from './transport/transport.js';
import { WatchHub } from './watch/hub.js';
import { ServiceViews } from './views/service-views.js';
import { clusterStatus, type ClusterStatus } from './cluster-status.js';
import { sharedBuild, type SharedBuild } from './http/loop-budget.js';
import { AdapterMetrics } from './metrics/adapter-metrics.js';

/** Collaborators a peer is built from: everything that touches time, chance or the outside. */
export interface NodeComponents {
  clock: Clock;
  /**
   * The clock of the peer's own periodic work: membership, the reaper, anti-entropy. `clock`
   * unless given; src/peer.ts gives one held while the connections queued during a stall are
   * accepted (clock/stall-watch.ts). The work of a request never runs on it.
   */
  backgroundClock?: Clock;
  rng: Rng;
  logger: Logger;
  /** How this peer calls the others. */
  transport: PeerTransport;
  /** The file system under the data dir; tests pass a simulated one. */
  disk?: Disk;
  /** Who holds the data dir lock; defaults to this process (tests play several processes in one). */
  processIdentity?: LockIdentity;
}

/** Number of anti-entropy digest buckets; the same on every peer (see docs/replication.md, Anti-entropy). */
export const DIGEST_BUCKETS = 4096;
/** Digest buckets per start-up snapshot page (16 pages in all). */
const SNAPSHOT_BUCKETS_PER_PAGE = 256;
/** Most instances one lease check asks a peer about in one call (a peer accepts up to 20,000). */
const LEASE_CHECK_BATCH_ENTRIES = 5_000;

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
  /**
   * The adapter contract's ports of this peer (src/adapters/contract.ts): its application
   * layer, access, the one rate limiter and the held-slot pools every protocol shares, and the
   * redacting, sampling logger. Made once here, so /v1, Eureka, Consul, xDS, DNS and Nacos count
   * in the same buckets.
   */
  readonly ports: AdapterPorts;
  /** Heartbeats received since start, by outcome (read by the metrics; an integer bump per heartbeat). */
  readonly heartbeats: Record<HeartbeatOutcome, number> = { renewed: 0, relayed: 0, takeover: 0, unknown: 0 };
  readonly startedAtMs: number;
  bootstrapResult: BootstrapResult | undefined;
  /** How long the start-up sync took (until the peer was caught up and ready), once it is done. */
  bootstrapDurationMs: number | undefined;
  /** The protocol adapters' metrics port (metrics/adapter-metrics.ts): each adapter records into it, /metrics reads it. */
  readonly adapterMetrics: AdapterMetrics;
  private readyFlag = false;
  /**
   * Set while this peer's start-up sync holds, or may hold, part of a registry (a pull has
   * begun and the sync is not done): its snapshot stream and pages then say it is not settled,
   * so that a peer joining through it does not take its registry as whole.
   */
  private holdsPartial = false;
  /** Set by `stop`: a start-up sync still trying gives up instead of going on. */
  private stopping = false;
  /** Counts `start` calls: a sync of an earlier start (stopped, then started again) gives up. */
  private startCount = 0;
  /** Ends the start-up sync's wait between two rounds at once (set while it waits). */
  private readonly stopWaits = new Set<() => void>();
  /** The `/v1/cluster` view being gathered, shared by the requests that arrive meanwhile. */
  private readonly statusBuild: SharedBuild<ClusterStatus> = {};
  private readonly log: Logger;

  constructor(
    readonly components: NodeComponents,
    readonly config: RegistryConfig,
  ) {
    const { clock, rng, transport } = components;
    const logger = components.logger.child({ peer: config.self.id });
    const base = { clock, rng, transport, logger };
    const background = { ...base, clock: components.backgroundClock ?? clock };
    this.clock = clock;
    this.transport = transport;
    this.log = logger;
    this.startedAtMs = clock.nowMs();
    this.adapterMetrics = new AdapterMetrics({ monotonicMs: () => performance.now(), nowMs: () => clock.nowMs() });
    this.store = new InstanceStore(DIGEST_BUCKETS);
    this.hlc = new HybridClock(clock, config.self.id);
    // Built in this order (each one's collaborators first); membership draws its incarnation from the Rng.
    this.membership = membershipOf(background, config);
    const leases = leasesOf({ ...base, store: this.store, hlc: this.hlc, membership: this.membership, node: this }, config, this.startedAtMs);
    this.safety = leases.safety;
    this.registry = leases.registry;
    const replication = replicationOf({ ...base, backgroundClock: background.clock, registry: this.registry, membership: this.membership, settled: () => this.settled }, config);
    this.inbox = replication.inbox;
    this.reaper = reaperOf({ ...background, registry: this.registry, membership: this.membership, safety: this.safety, inbox: this.inbox }, config);
    this.replicator = replication.replicator;
    this.antiEntropy = replication.antiEntropy;
    this.peerApi = replication.peerApi;
    this.views = new ServiceViews({ clock, store: this.store, leaseView: () => this.registry.leaseView() });
    this.watch = new WatchHub(
      // Its pushes are the native adapter's (watch streams): counted, with their delay from the change.
      { clock, rng, registry: this.registry, logger, views: this.views, pushes: this.adapterMetrics.adapter('native').pushes },
      { coalesceMs: config.cluster.watchCoalesceMs, maxWatchers: config.cluster.watchMaxWatchers },
    );
    this.persistence = persistenceOf({ ...components, logger, store: this.store, registry: this.registry, hlc: this.hlc }, config);
    this.durability = this.persistence ?? inMemoryDurability;
    this.ports = createAdapterPorts({ application: applicationOf(this), config, clock, logger, metrics: this.adapterMetrics });
    this.membership.subscribe({
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

  /**
   * Whether this peer's registry may be taken as whole by a peer that syncs from it: ready, or
   * not ready but holding no registry it knows may be partial (no pull has reached it yet: it
   * starts with what it loaded from its data dir, or nothing). Peers starting together are so.
   */
  get settled(): boolean {
    return this.readyFlag || !this.holdsPartial;
  }

  /** Starts probing and replicating, syncs from a live peer, then starts the reaper and anti-entropy. */
  async start(): Promise<void> {
    // The data dir is loaded first (restored instances get a grace lease), then the peer
    // syncs with the others: anti-entropy brings it up to date.
    this.stopping = false;
    const startCount = ++this.startCount;
    const stopped = () => this.stopping || startCount !== this.startCount;
    this.holdsPartial = false;
    await this.persistence?.open();
    this.membership.start();
    this.replicator.start();
    const syncStartedMs = this.clock.nowMs();
    this.bootstrapResult = await bootstrap(
      this.membership.list().map((member) => member.descriptor),
      {
        clock: this.clock,
        rng: this.components.rng,
        transport: this.transport,
        inbox: this.inbox,
        antiEntropy: this.antiEntropy,
        logger: this.log,
        learn: (members) => this.membership.learn(members),
        reportContact: (peerId) => this.membership.reportContact(peerId),
        knownPeers: () => this.membership.list().map((member) => member.descriptor),
        unsettled: () => {
          if (!stopped()) this.holdsPartial = true;
        },
        stopping: stopped,
        wait: (delayMs) => this.waitUnlessStopped(delayMs),
      },
      { selfId: this.config.self.id, callTimeoutMs: this.config.cluster.peerCallTimeoutMs, bucketsPerPage: SNAPSHOT_BUCKETS_PER_PAGE, startedAtMs: this.startedAtMs },
    );
    // Stopped while the sync was still trying: it never completed, so the peer never serves.
    if (stopped()) return;
    this.bootstrapDurationMs = this.clock.nowMs() - syncStartedMs;
    this.reaper.start();
    this.antiEntropy.start();
    this.readyFlag = true;
  }

  /** Stops every timer and waits for replication batches in flight. */
  async stop(): Promise<void> {
    this.readyFlag = false;
    this.stopping = true;
    for (const end of [...this.stopWaits]) end();
    this.watch.closeAll();
    this.views.close();
    this.antiEntropy.stop();
    this.membership.stop();
    this.reaper.stop();
    // What an owner going down or coming back left to do is done now: no timer outlives the peer.
    this.registry.finishOwnerPasses();
    await this.replicator.stop();
    await this.persistence?.close();
  }

  /** Resolves after `delayMs` of the clock's time, or at once when the peer stops (its timer cancelled). */
  private waitUnlessStopped(delayMs: number): Promise<void> {
    return new Promise((resolve) => {
      const end = () => {
        timer.cancel();
        this.stopWaits.delete(end);
        resolve();
      };
      const timer = this.clock.setTimeout(end, delayMs);
      this.stopWaits.add(end);
    });
  }

  /** The region of a zone, as the peers' configuration says (this peer and every peer it knows). */
  readonly regionOfZone = (zone: string): string | undefined => {
    if (zone === this.config.self.zone) return this.config.self.region;
    return this.membership.list().find((member) => member.descriptor.zone === zone)?.descriptor.region;
  };

  /**
   * Everything `/v1/cluster` shows. The count of served instances takes turns: requests that
   * arrive while one is gathered share it, so that many at once cost one count.
   */
  status(): Promise<ClusterStatus> {
    return sharedBuild(this.statusBuild, () => clusterStatus(this), () => false);
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
    // A peer still in its start-up sync compares nothing yet: the sync ends with a round of its
    // own, and a round now, against a partial registry, would have the other peer list and send
    // most of its registry a second time, in one answer (at 1,000,000 instances tens of seconds
    // of its event loop: bench/snapshot-join.ts).
    if (!this.readyFlag) return;
    const peer: PeerDescriptor | undefined = this.membership.get(peerId)?.descriptor;
    if (peer) void this.antiEntropy.syncWith(peer, { evenIfBusy: true });
  }
}

/** What every part of a peer is built with: time, chance, the way to the other peers, the log. */
interface BaseComponents {
  clock: Clock;
  rng: Rng;
  transport: PeerTransport;
  logger: Logger;
}

/** SWIM-style membership from the seeds, with a new incarnation at every start. */
function membershipOf(base: BaseComponents, config: RegistryConfig): Membership {
  const { clock, rng, transport, logger } = base;
  const { cluster, self } = config;
  return new Membership(
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
}

/**
 * The registry and what guards its leases: eviction safety (self-preservation, the partition
 * guard, the caps), which the registry tells of every renewal, and the reaper. The registry
 * counts heartbeats into the node's figures and asks it the region of a zone.
 */
function leasesOf(
  parts: BaseComponents & {
    store: InstanceStore;
    hlc: HybridClock;
    membership: Membership;
    node: Pick<RegistryNode, 'heartbeats' | 'regionOfZone'>;
  },
  config: RegistryConfig,
  startedAtMs: number,
): { safety: EvictionSafety; registry: Registry } {
  const { clock, rng, logger, membership, node } = parts;
  const { cluster, self } = config;
  const safety = new EvictionSafety({ ...cluster, startedAtMs }, logger);
  const registry = new Registry(
    {
      clock,
      hlc: parts.hlc,
      store: parts.store,
      liveness: membership,
      logger,
      guards: () => safety.guards(),
      renewals: safety.renewals,
      regionOfZone: (zone) => node.regionOfZone(zone),
      heartbeats: { heartbeat: (outcome) => void (node.heartbeats[outcome] += 1) },
      ownership: OWNERSHIP_RULES,
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
  return { safety, registry };
}

/**
 * The lease reaper, and the question it asks the other peers before it evicts what this peer
 * owns (the lease check: it applies their takeovers through the inbox).
 */
function reaperOf(
  parts: BaseComponents & { registry: Registry; membership: Membership; safety: EvictionSafety; inbox: Inbox },
  config: RegistryConfig,
): Reaper {
  const { clock, rng, transport, logger, registry, membership, safety, inbox } = parts;
  const { cluster, self } = config;
  const expiryCheck = new LeaseCheck(
    {
      transport,
      inbox,
      logger,
      livePeers: () => membership.list().filter((m) => membership.isUp(m.descriptor.id)).map((m) => m.descriptor),
      reportContact: (peerId) => membership.reportContact(peerId),
    },
    { selfId: self.id, callTimeoutMs: cluster.peerCallTimeoutMs, batchMaxEntries: LEASE_CHECK_BATCH_ENTRIES },
  );
  return new Reaper(
    { clock, rng, registry, membership, safety, logger, expiryCheck },
    {
      evictionIntervalMs: cluster.evictionIntervalMs,
      tombstoneTtlMs: cluster.tombstoneTtlMs,
      orphanTimeoutMs: cluster.orphanTimeoutMs,
      heartbeatIntervalMs: cluster.heartbeatIntervalMs,
      renewalWindowMs: cluster.renewalWindowMs,
    },
  );
}

/**
 * Replication both ways: the inbox (every record from another peer), the outbound channels,
 * anti-entropy, and the peer API that serves the other peers' calls. Contact with a peer
 * through any of them counts for membership.
 */
function replicationOf(
  parts: BaseComponents & { backgroundClock: Clock; registry: Registry; membership: Membership; settled(): boolean },
  config: RegistryConfig,
): { inbox: Inbox; replicator: Replicator; antiEntropy: AntiEntropy; peerApi: PeerService } {
  const { clock, backgroundClock, rng, transport, logger, registry, membership, settled } = parts;
  const { cluster, self } = config;
  const reportContact = (peerId: string) => membership.reportContact(peerId);
  const inbox = new Inbox(registry, clock, logger);
  const replicator = new Replicator(
    { clock, rng, registry, transport, logger, isUp: (id) => membership.isUp(id), reportContact },
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
  const antiEntropy = new AntiEntropy(
    {
      clock: backgroundClock,
      rng,
      registry,
      inbox,
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
  const peerApi = new PeerService({ membership, inbox, antiEntropy, registry, clock, nextTurn, settled });
  return { inbox, replicator, antiEntropy, peerApi };
}

/** Resolves on the event loop's next check phase: what a long piece of core work yields to between slices. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The data dir's log and snapshots, or null when the peer runs purely in memory. */
function persistenceOf(
  parts: Pick<NodeComponents, 'clock' | 'disk' | 'processIdentity'> & { logger: Logger; store: InstanceStore; registry: Registry; hlc: HybridClock },
  config: RegistryConfig,
): Persistence | null {
  if (config.dataDir === null) return null;
  const { clock, logger, store, registry, hlc } = parts;
  return new Persistence(
    { clock, logger, store, registry, hlc, disk: parts.disk ?? nodeDisk, ...(parts.processIdentity ? { identity: parts.processIdentity } : {}) },
    { ...config.storage, dataDir: config.dataDir, peerId: config.self.id, tombstoneTtlMs: config.cluster.tombstoneTtlMs },
  );
}
