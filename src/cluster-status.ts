import type { HybridClock } from './clock/hlc.js';
import type { RegistryConfig } from './config/load.js';
import type { EvictionSafety, EvictionSafetyStatus } from './lease/eviction-safety.js';
import type { Reaper, ReaperRun } from './lease/reaper.js';
import type { Membership } from './membership/membership.js';
import type { PeerState } from './membership/state.js';
import { yieldToLoop } from './http/loop-budget.js';
import { gatherFiguresSliced, servedCount } from './metrics/registry-figures.js';
import type { Registry } from './registry/registry.js';
import type { InstanceStore } from './registry/store.js';
import type { AntiEntropy, AntiEntropyStats } from './replication/anti-entropy.js';
import type { BootstrapResult } from './replication/bootstrap.js';
import type { ChannelStats } from './replication/channel.js';
import type { DelaySummary } from './replication/delay-sampler.js';
import type { Inbox, InboxStats } from './replication/inbox.js';
import type { Replicator } from './replication/replicator.js';
import type { PeerTransport } from './transport/transport.js';

/** One other peer as `/v1/cluster` shows it. */
export interface PeerStatus {
  id: string;
  url: string;
  region: string;
  zone: string;
  state: PeerState;
  stateSinceMs: number;
  lastContactMs: number | null;
  /** The outbound replication channel to this peer. */
  replication: ChannelStats | null;
  /** Calls and bytes this peer sent to and received from that peer (all peer-API calls). */
  traffic: { calls: number; bytesSent: number; bytesReceived: number } | null;
}

/** The body of `GET /v1/cluster`. */
export interface ClusterStatus {
  cluster: string;
  profile: string;
  self: {
    id: string;
    url: string;
    region: string;
    zone: string;
    ready: boolean;
    startedAtMs: number;
    nowMs: number;
    revision: number;
    /** Records held, tombstones included. */
    records: number;
    /** Instances served (live lease, not hidden), any status. */
    instances: number;
    /** How the start-up sync went: the peer it came from, or null when it started alone. */
    syncedFrom: string | null;
    /** Milliseconds the hybrid logical clock runs ahead of this peer's wall clock. */
    clockDriftMs: number;
    /** Root hash of the anti-entropy digest: peers holding the same records show the same. */
    digest: string;
  };
  peers: PeerStatus[];
  inbound: InboxStats & { delayMs: DelaySummary };
  antiEntropy: AntiEntropyStats;
  reaper: ReaperRun | null;
  /** Self-preservation, the partition guard and the eviction caps: on or off, why, and the figures. */
  evictionSafety: EvictionSafetyStatus;
}

/**
 * The figures a peer keeps about itself and the others, read by `/v1/cluster` and the metrics
 * at the time they are asked for: leases, peer states, replication, anti-entropy, eviction safety.
 */
export interface PeerFigures {
  /** True once the start-up sync is done (as /readyz). */
  readonly ready: boolean;
  readonly registry: Pick<Registry, 'leaseView'>;
  readonly membership: Pick<Membership, 'list'>;
  readonly replicator: Pick<Replicator, 'stats'>;
  readonly inbox: Pick<Inbox, 'stats' | 'delaySummary'>;
  readonly antiEntropy: Pick<AntiEntropy, 'stats'>;
  readonly safety: Pick<EvictionSafety, 'status'>;
}

/** What `/v1/cluster` reads from a peer, and nothing more (a `RegistryNode` is one). */
export interface ClusterStatusSources extends PeerFigures {
  readonly config: Pick<RegistryConfig, 'clusterName' | 'profile' | 'self'>;
  readonly startedAtMs: number;
  readonly bootstrapResult: BootstrapResult | undefined;
  readonly store: Pick<InstanceStore, 'revision' | 'size' | 'allServices'> & { readonly digest: Pick<InstanceStore['digest'], 'rootHash'> };
  readonly hlc: Pick<HybridClock, 'driftMs'>;
  readonly reaper: Pick<Reaper, 'lastRun'>;
  readonly transport: Pick<PeerTransport, 'trafficByPeer'>;
}

/**
 * Gathers the cluster view of one peer. Counts the served instances in slices that yield
 * between them (registry-figures.ts, as a metrics scrape does): counted in one piece, a request
 * held the event loop 90-115 ms at 1,000,000 instances (bench/findings.md, 2026-12-06 night);
 * everything else is read at once when the count is done.
 */
export async function clusterStatus(node: ClusterStatusSources, yieldTurn: () => Promise<void> = yieldToLoop): Promise<ClusterStatus> {
  const { config, registry, membership } = node;
  const view = registry.leaseView();
  const served = servedCount(await gatherFiguresSliced(node.store, view, yieldTurn));
  const channels = node.replicator.stats();
  const traffic = node.transport.trafficByPeer?.() ?? {};
  return {
    cluster: config.clusterName,
    profile: config.profile,
    self: {
      ...config.self,
      ready: node.ready,
      startedAtMs: node.startedAtMs,
      nowMs: view.nowMs,
      revision: node.store.revision,
      records: node.store.size,
      instances: served,
      syncedFrom: node.bootstrapResult?.from ?? null,
      clockDriftMs: node.hlc.driftMs(),
      digest: node.store.digest.rootHash(),
    },
    peers: membership
      .list()
      .map((member) => ({
        ...member.descriptor,
        state: member.state,
        stateSinceMs: member.sinceMs,
        lastContactMs: member.lastContactMs,
        replication: channels[member.descriptor.id] ?? null,
        traffic: traffic[member.descriptor.id] ?? null,
      }))
      .sort((a, b) => (a.id < b.id ? -1 : 1)),
    inbound: { ...node.inbox.stats, delayMs: node.inbox.delaySummary() },
    antiEntropy: { ...node.antiEntropy.stats },
    reaper: node.reaper.lastRun ?? null,
    evictionSafety: node.safety.status(view.nowMs),
  };
}
