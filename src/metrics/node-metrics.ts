import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Clock } from '../clock/clock.js';
import type { PeerFigures } from '../cluster-status.js';
import type { HeartbeatOutcome } from '../registry/registry.js';
import type { InstanceStore } from '../registry/store.js';
import { instanceStatuses } from '../registry/types.js';
import { DEFAULT_NAMESPACE } from '../registry/validate.js';
import { peerStates } from '../membership/state.js';
import type { EvictionSafetyStatus } from '../lease/eviction-safety.js';
import type { ChannelStats } from '../replication/channel.js';
import type { WatchHub } from '../watch/hub.js';
import type { AdapterMetrics } from './adapter-metrics.js';
import { registerAdapterSeries, type RateShares } from './adapter-series.js';
import { HttpAttribution } from './http-attribution.js';
import { registerPeerSeries, type PeerSeriesSources } from './peer-series.js';
import { RequestHistogram } from './request-histogram.js';
import { WriteCounts, type EvictionReason } from './write-counts.js';
import { gatherFigures, gatherFiguresSliced, type RegistryFigures } from './registry-figures.js';
import { yieldToLoop } from '../http/loop-budget.js';
import type { StallWatch } from '../clock/stall-watch.js';

/**
 * What the metrics read from a peer, and nothing more (a `RegistryNode` is one): the figures
 * the core keeps anyway, read at scrape time, and the store's change feed for the write counts.
 */
export interface MetricsSources extends PeerFigures, PeerSeriesSources {
  readonly clock: Pick<Clock, 'nowMs'>;
  /** The protocol adapters' recorders (requests, held slots, pushes, DNS and xDS figures). */
  readonly adapterMetrics: AdapterMetrics;
  /** The adapter ports' shared rate limiter (`ports.limits.rates`): its heaviest principals, read at scrape time. */
  readonly ports?: { readonly limits: { readonly rates: RateShares } };
  readonly store: Pick<InstanceStore, 'allServices' | 'revision' | 'onChange'>;
  readonly heartbeats: Readonly<Record<HeartbeatOutcome, number>>;
  readonly watch: Pick<WatchHub, 'stats'>;
}

/** Buckets of the HTTP latency histogram, in seconds: heartbeats take well under a millisecond. */
const HTTP_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const EVICTION_REASONS: readonly EvictionReason[] = ['expired', 'orphan', 'hidden'];

export interface NodeMetricsOptions {
  /**
   * Also export the process figures (CPU, memory, event loop lag, GC; prom-client's default
   * metrics). Off for peers built in tests, where many share one process.
   */
  processMetrics?: boolean;
  /** Lets the event loop run between two slices of a scrape's registry count (default setImmediate; tests count them). */
  yieldTurn?: () => Promise<void>;
  /** The peer's stall watch (clock/stall-watch.ts): its stalls and the peer calls skipped after them. */
  stallWatch?: Pick<StallWatch, 'stalls' | 'droppedTotal'>;
}

/**
 * The Prometheus metrics of one peer (docs/metrics.md), in a registry of its own so that
 * several peers can live in one process. Almost every series is read from state the core
 * already keeps, at scrape time (`collect`): nothing is added to the hot paths except the
 * HTTP latency histogram and the change-feed counters (registrations, cancels, evictions).
 */
export class NodeMetrics {
  readonly registry = new Registry();
  private readonly writes: WriteCounts;
  private readonly httpDuration: RequestHistogram;
  private readonly httpAttribution: HttpAttribution;
  private frame: RegistryFigures | undefined;
  private readonly yieldTurn: () => Promise<void>;

  constructor(
    private readonly sources: MetricsSources,
    options: NodeMetricsOptions = {},
  ) {
    this.writes = new WriteCounts(sources.store);
    const registers = [this.registry];
    const metrics = this;
    const frame = () => (metrics.frame ??= gatherFigures(sources.store, sources.registry.leaseView()));
    this.yieldTurn = options.yieldTurn ?? yieldToLoop;
    const clock = sources.clock;

    /** A series with at most one label (`''` for none), its figures read at scrape time. */
    const series = (type: 'gauge' | 'counter', name: string, help: string, label: string, read: () => Record<string, number>) => {
      const labelNames = label ? [label] : [];
      const fill = (write: (labels: Record<string, string>, figure: number) => void) => {
        for (const [value, figure] of Object.entries(read())) write(label ? { [label]: value } : {}, figure);
      };
      // A counter's total is kept by the core: each scrape sets it afresh (reset, then inc).
      return type === 'gauge'
        ? new Gauge({ name, help, labelNames, registers, collect() { this.reset(); fill((labels, figure) => this.set(labels, figure)); } })
        : new Counter({ name, help, labelNames, registers, collect() { this.reset(); fill((labels, figure) => this.inc(labels, figure)); } });
    };
    const gauge = (name: string, help: string, label: string, read: () => Record<string, number>) => series('gauge', name, help, label, read);
    const counter = (name: string, help: string, label: string, read: () => Record<string, number>) => series('counter', name, help, label, read);
    const one = (figure: number) => ({ '': figure });
    /** One figure per peer with an outbound replication channel. */
    const perPeer = (read: (stats: ChannelStats) => number) => () =>
      Object.fromEntries(Object.entries(sources.replicator.stats()).map(([peer, stats]) => [peer, read(stats)]));
    const safety = () => sources.safety.status(clock.nowMs());

    // --- the registry's contents -------------------------------------------------------------
    new Gauge({
      name: 'registry_instances',
      help: 'Instances served by this peer (live or held lease), by namespace and status.',
      labelNames: ['namespace', 'status'],
      registers,
      collect() {
        this.reset();
        for (const [namespace, byStatus] of frame().instances) {
          for (const status of instanceStatuses) this.set({ namespace, status }, byStatus.get(status) ?? 0);
        }
      },
    });
    gauge('registry_services', 'Services with at least one served instance, by namespace.', 'namespace', () => Object.fromEntries(frame().services));
    gauge('registry_records', 'Records held in the replicated map: live instances (served or not) and tombstones.', 'kind', () => ({
      instance: frame().live,
      tombstone: frame().tombstones,
    }));
    gauge('registry_revision', "This peer's local revision counter (grows on every change it sees).", '', () => one(sources.store.revision));
    gauge('registry_ready', '1 once the peer finished its start-up sync (as /readyz), else 0.', '', () => one(sources.ready ? 1 : 0));

    // --- client writes -----------------------------------------------------------------------
    /** By namespace from the change-feed counts; `default` is always there, at 0 before anything. */
    const byNamespace = (counts: Map<string, number>) => ({ [DEFAULT_NAMESPACE]: 0, ...Object.fromEntries(counts) });
    counter(
      'registry_registrations_total',
      'New instances registered at this peer (a re-registration of a live instance is not counted), by namespace.',
      'namespace',
      () => byNamespace(this.writes.snapshot().registrations),
    );
    counter('registry_cancels_total', 'Instances cancelled through this peer, by namespace.', 'namespace', () => byNamespace(this.writes.snapshot().cancels));
    counter(
      'registry_heartbeats_total',
      'Heartbeats received by this peer, by outcome: renewed (owned here), relayed (owned by another live peer), takeover (owner down), unknown (answered 404).',
      'outcome',
      () => sources.heartbeats,
    );
    new Counter({
      name: 'registry_evictions_total',
      help: 'Instances this peer stopped serving because their lease ran out, by namespace and reason: expired (owned here; replicated), orphan (swept for a long-down owner; replicated), hidden (owner down, grace over; this peer only).',
      labelNames: ['namespace', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const reason of EVICTION_REASONS) this.inc({ namespace: DEFAULT_NAMESPACE, reason }, 0);
        for (const [namespace, byReason] of metrics.writes.snapshot().evictions) {
          for (const reason of EVICTION_REASONS) this.inc({ namespace, reason }, byReason[reason]);
        }
      },
    });

    // --- peers and replication ---------------------------------------------------------------
    new Gauge({
      name: 'registry_peer_state',
      help: 'State of each other peer as this peer sees it: 1 for its current state (up, suspect, down), 0 for the others.',
      labelNames: ['peer', 'state'],
      registers,
      collect() {
        this.reset();
        for (const member of sources.membership.list()) {
          for (const state of peerStates) this.set({ peer: member.descriptor.id, state }, member.state === state ? 1 : 0);
        }
      },
    });
    gauge('registry_peer_last_contact_age_seconds', 'Seconds since the last successful probe of or call to each other peer (absent before the first).', 'peer', () => {
      const nowMs = clock.nowMs();
      const ages: Record<string, number> = {};
      for (const member of sources.membership.list()) {
        if (member.lastContactMs !== null) ages[member.descriptor.id] = Math.max(0, nowMs - member.lastContactMs) / 1000;
      }
      return ages;
    });
    gauge('registry_replication_queue_depth', 'Writes waiting in the outbound queue to each peer.', 'peer', perPeer((s) => s.queued));
    gauge('registry_replication_in_flight', 'Replication batches in flight to each peer.', 'peer', perPeer((s) => s.inFlight));
    gauge(
      'registry_replication_lag_seconds',
      'Age of the oldest write waiting in the queue to each peer (a batch on its way is not counted; 0 when the queue is empty).',
      'peer',
      perPeer((s) => s.lagMs / 1000),
    );
    counter('registry_replication_batches_total', 'Replication batches each peer accepted.', 'peer', perPeer((s) => s.batchesSent));
    counter('registry_replication_records_total', 'Records in the replication batches each peer accepted.', 'peer', perPeer((s) => s.recordsSent));
    counter(
      'registry_replication_dropped_total',
      'Writes given up for each peer (queue overflow, or a batch refused for good); anti-entropy repairs them.',
      'peer',
      perPeer((s) => s.dropped),
    );
    new Counter({
      name: 'registry_replication_failures_total',
      help: 'Failed replication batches to each peer, by kind: congestion and transient ones are retried with backoff, permanent ones are dropped.',
      labelNames: ['peer', 'kind'],
      registers,
      collect() {
        this.reset();
        for (const [peer, stats] of Object.entries(sources.replicator.stats())) {
          for (const [kind, count] of Object.entries(stats.failures)) this.inc({ peer, kind }, count);
        }
      },
    });
    const inbox = sources.inbox.stats;
    counter('registry_inbound_batches_total', 'Batches of records received from other peers (replication, anti-entropy pushes, snapshot pages).', '', () => one(inbox.batches));
    counter(
      'registry_inbound_records_total',
      'Records received from other peers, by result: applied (newer than ours), ignored (same or older), invalid (malformed, skipped).',
      'result',
      () => ({ applied: inbox.applied, ignored: inbox.ignored, invalid: inbox.invalid }),
    );
    counter(
      'registry_inbound_reasserted_total',
      'Evictions from other peers refused because a client still heartbeats here (this peer took the instance over).',
      '',
      () => one(inbox.reasserted),
    );
    gauge(
      'registry_replication_delay_seconds',
      'Time from a write on another peer to its arrival here, over the last 10,000 replicated writes: quantile 0.5, 0.99 and 1 (the maximum). Includes the clock offset between machines.',
      'quantile',
      () => {
        const summary = sources.inbox.delaySummary();
        return { '0.5': summary.p50Ms / 1000, '0.99': summary.p99Ms / 1000, '1': summary.maxMs / 1000 };
      },
    );
    // A peer built without a stall watch (tests) has seen none.
    const stallWatch = options.stallWatch;
    counter('registry_event_loop_stalls_total', 'Times the event loop stood still 1 s or more (the process stopped, paused or starved).', '', () => one(stallWatch?.stalls ?? 0));
    counter(
      'registry_peer_calls_abandoned_total',
      'Peer calls skipped unanswered after a stall because their caller had given up on them (closed the connection, or past the deadline it sent).',
      '',
      () => one(stallWatch?.droppedTotal ?? 0),
    );
    const antiEntropy = sources.antiEntropy.stats;
    counter('registry_anti_entropy_rounds_total', 'Anti-entropy rounds this peer started (digest comparisons with a random live peer).', '', () => one(antiEntropy.rounds));
    counter('registry_anti_entropy_rounds_in_sync_total', 'Anti-entropy rounds that found nothing to repair.', '', () => one(antiEntropy.roundsInSync));
    counter(
      'registry_anti_entropy_rounds_deferred_total',
      'Anti-entropy rounds that ended at the digest because the other peer was receiving its start-up sync (it compares once caught up).',
      '',
      () => one(antiEntropy.roundsDeferred),
    );
    counter('registry_anti_entropy_failures_total', 'Anti-entropy rounds that could not complete (the other peer did not answer).', '', () => one(antiEntropy.failures));
    counter(
      'registry_anti_entropy_repaired_keys_total',
      'Keys repaired by anti-entropy, by direction: pulled (newer there) or pushed (newer here).',
      'direction',
      () => ({ pulled: antiEntropy.keysPulled, pushed: antiEntropy.keysPushed }),
    );

    // --- eviction safety -----------------------------------------------------------------------
    const selfPreservation = (read: (s: EvictionSafetyStatus['selfPreservation']) => number) => () => one(read(safety().selfPreservation));
    gauge(
      'registry_self_preservation_active',
      '1 while self-preservation is on (this peer has stopped evicting its expired instances), else 0.',
      '',
      selfPreservation((s) => (s.active ? 1 : 0)),
    );
    gauge(
      'registry_self_preservation_renewals',
      'Renewals (registers, heartbeats, takeovers of owned instances) received in the current self-preservation window.',
      '',
      selfPreservation((s) => s.renewalsInWindow),
    );
    gauge('registry_self_preservation_expected_renewals', 'Renewals expected in the window from the instances this peer owns.', '', selfPreservation((s) => s.expectedRenewalsInWindow));
    gauge(
      'registry_self_preservation_threshold_ratio',
      'Share of the expected renewals below which self-preservation turns on (cluster.renewalThresholdRatio).',
      '',
      selfPreservation((s) => s.thresholdRatio),
    );
    gauge('registry_self_preservation_owned_instances', 'Instances this peer owns that heartbeated at least once (whose heartbeats it expects).', '', selfPreservation((s) => s.ownedInstances));
    gauge('registry_partition_guard_active', '1 while the partition guard holds the instances of down peers, else 0.', '', () => one(safety().partitionGuard.active ? 1 : 0));
    gauge('registry_partition_guard_down_owned_ratio', 'Share of the registry owned by peers that are down.', '', () => one(safety().partitionGuard.downOwnedShare));
    gauge('registry_eviction_held', 'Expired instances each eviction guard kept at the last reaper run.', 'guard', () => ({ ...safety().held }));
    counter(
      'registry_eviction_held_total',
      'Expired instances kept by each eviction guard, summed over reaper runs (an instance held for several runs counts each time).',
      'guard',
      () => ({ ...safety().heldTotal }),
    );

    // --- watchers --------------------------------------------------------------------------------
    gauge('registry_watchers', 'Open watch streams and waiting long polls, by kind (stream, long_poll).', 'kind', () => {
      const stats = sources.watch.stats();
      return { stream: stats.subscribers, long_poll: stats.longPolls };
    });
    counter('registry_watch_events_total', 'Events (snapshots and deltas) sent to watch streams.', '', () => one(sources.watch.stats().eventsSent));
    counter('registry_watch_dropped_total', 'Watch streams cut because their reader fell too far behind.', '', () => one(sources.watch.stats().dropped));

    // --- HTTP ----------------------------------------------------------------------------------
    this.httpDuration = new RequestHistogram(
      'registry_http_request_duration_seconds',
      'Time to answer an HTTP request, by method, route pattern and status code. Watch streams are not counted; long polls are, under their own route label.',
      HTTP_BUCKETS_S,
      this.registry,
    );

    // --- protocols, peer traffic, start-up sync --------------------------------------------------
    this.httpAttribution = new HttpAttribution(sources.adapterMetrics);
    registerAdapterSeries(this.registry, sources.adapterMetrics, sources.ports?.limits.rates);
    registerPeerSeries(this.registry, sources);

    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Records one answered request; `route` is the route's pattern, never the raw URL. */
  observeHttp(method: string, route: string, statusCode: number, seconds: number): void {
    this.httpDuration.observe(method, route, statusCode, seconds);
    this.httpAttribution.observe(method, route, statusCode, seconds);
  }

  /**
   * Declares a route of the main port as an operation of its protocol adapter (native, Eureka,
   * Prometheus SD: http-attribution.ts), as it is added; its requests are then counted there too.
   */
  declareHttpRoute(method: string, url: string, options: { longPoll?: boolean } = {}): void {
    this.httpAttribution.declare(method, url, options);
  }

  /**
   * The exposition text of every series; the node's state is read once for the whole scrape,
   * the registry counted first in slices (registry-figures.ts) so that no heartbeat waits for it.
   */
  async scrape(): Promise<string> {
    this.frame = undefined;
    try {
      this.frame = await gatherFiguresSliced(this.sources.store, this.sources.registry.leaseView(), this.yieldTurn);
      return await this.registry.metrics();
    } finally {
      this.frame = undefined;
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  stop(): void {
    this.writes.stop();
  }
}
