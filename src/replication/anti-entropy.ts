import { sleep, type Clock, type TimerHandle } from '../clock/clock.js';
import { randomInt, shuffled, withJitter, type Rng } from '../clock/rng.js';
import type { Logger } from '../log/logger.js';
import type { Registry } from '../registry/registry.js';
import type { StoredInstance } from '../registry/types.js';
import { callPeer } from '../transport/peer-answers.js';
import type {
  DigestEntry,
  DigestRequest,
  DigestResponse,
  PeerMethod,
  PeerRequest,
  ReceivedAnswer,
  ReconcileRequest,
  ReconcileResponse,
  SubdigestRequest,
  SubdigestResponse,
  SnapshotRequest,
  SnapshotResponse,
  WireRecord,
} from '../transport/peer-calls.js';
import { PeerCallError, type EncodedRequest, type PeerDescriptor, type PeerTransport } from '../transport/transport.js';
import { SnapshotPages } from './snapshot-pages.js';
import type { Inbox } from './inbox.js';
import { diffEntries, RECONCILE_ANSWER_RECORDS } from './reconcile-parts.js';
import { RoundListings } from './round-listings.js';
import { reconcileInParts } from './reconcile-round.js';
import { StoreScans } from './store-scans.js';
import { TurnQueue } from '../clock/turn-queue.js';
import { toWireRecord } from './wire.js';

export interface AntiEntropyComponents {
  clock: Clock;
  rng: Rng;
  registry: Registry;
  inbox: Inbox;
  transport: PeerTransport;
  logger: Logger;
  /** Live peers to pick from (never this one). */
  livePeers(): PeerDescriptor[];
  reportContact(peerId: string): void;
  /**
   * Lets the event loop run between two slices of a scan of the store (default: the clock's
   * `setTimeout(0)`, as the reaper's slices; tests count the yields).
   */
  yieldTurn?: () => Promise<void>;
}

export interface AntiEntropyInit {
  selfId: string;
  selfRegion: string;
  /** Rounds with peers of this peer's region (or any peer, when it is alone in its region). */
  intervalMs: number;
  /** Rounds with peers of other regions, on their own slower schedule. */
  crossRegionIntervalMs: number;
  callTimeoutMs: number;
  /** Most differing buckets reconciled in one round; the rest wait for the next. */
  maxBucketsPerRound: number;
  /** Records pushed in one `replicate` call. */
  pushBatchMaxRecords: number;
}

export interface AntiEntropyStats {
  rounds: number;
  roundsInSync: number;
  failures: number;
  keysPulled: number;
  keysPushed: number;
  /** Rounds that ended at the digest because the other peer was receiving its start-up sync. */
  roundsDeferred: number;
  lastRoundAtMs: number | null;
  lastRepairAtMs: number | null;
}

export interface RoundResult {
  peer: string;
  inSync: boolean;
  pulled: number;
  pushed: number;
  /** The other peer was receiving its start-up sync: nothing compared (see `handleDigest`). */
  deferred?: true;
  /** Where a repairing round's time went (absent when the digests matched). */
  work?: RoundWork;
}

/** What a repairing round exchanged and how long each step took, for its log line. */
export interface RoundWork {
  differingBuckets: number;
  /** Sub-buckets that differ within them (null: the peer reconciles whole buckets). */
  differingSubBuckets: number | null;
  /** Differing buckets left for the next round (past `maxBucketsPerRound`). */
  bucketsLeft: number;
  /** `[key, version, deleted]` entries listed, over every `reconcile` call. */
  entriesSent: number;
  /** `reconcile` calls the round was made of (`reconcileInParts`). */
  parts: number;
  digestMs: number;
  /** From the digest's answer to the last push. */
  reconcileMs: number;
}

/**
 * Gossip anti-entropy. Every `intervalMs` (jittered) this peer picks a random live peer of its
 * own region, and every `crossRegionIntervalMs` one of another region, and compares digests:
 * one root hash first (equal replicas cost one small round trip), then the bucket hashes, then
 * the sub-bucket hashes of the differing buckets, then `[key, version]` lists of the differing
 * sub-buckets only; each side ends up with the newer record of every key. This heals
 * partitions and lost batches, and catches up a restarted peer.
 */
export class AntiEntropy {
  readonly stats: AntiEntropyStats = {
    rounds: 0,
    roundsInSync: 0,
    failures: 0,
    keysPulled: 0,
    keysPushed: 0,
    roundsDeferred: 0,
    lastRoundAtMs: null,
    lastRepairAtMs: null,
  };
  private timer: TimerHandle | undefined;
  private crossTimer: TimerHandle | undefined;
  private stopped = false;
  private readonly syncing = new Set<string>();
  /** Peers with a second round started beside a busy one (see `syncWith`). */
  private readonly urgent = new Set<string>();
  private readonly log: Logger;
  private readonly snapshotPages: SnapshotPages;
  private readonly scans: StoreScans;
  private readonly listings: RoundListings;
  /** The turns that the steps of reconciles, this peer's rounds and other peers' alike, take one by one. */
  private readonly turns: TurnQueue;

  constructor(
    private readonly components: AntiEntropyComponents,
    private readonly init: AntiEntropyInit,
  ) {
    this.log = components.logger.child({ component: 'anti-entropy' });
    this.snapshotPages = new SnapshotPages(components.registry.store, components.clock);
    this.turns = new TurnQueue(components.yieldTurn ?? (() => sleep(components.clock, 0)));
    this.scans = new StoreScans(components.registry.store, () => this.turns.next());
    const bucketCount = () => components.registry.store.digest.bucketCount;
    this.listings = new RoundListings({ clock: components.clock, scans: this.scans, bucketCount }, init.callTimeoutMs);
  }

  start(): void {
    this.stopped = false;
    this.scheduleLocal();
    this.scheduleCrossRegion();
  }

  stop(): void {
    this.stopped = true;
    this.listings.clear();
    this.timer?.cancel();
    this.timer = undefined;
    this.crossTimer?.cancel();
    this.crossTimer = undefined;
  }

  /**
   * One round with a random live peer of this peer's region; when it is alone in its region,
   * with any live peer (so a region of one still converges).
   */
  async runRound(): Promise<RoundResult | undefined> {
    const live = this.components.livePeers();
    const local = live.filter((peer) => peer.region === this.init.selfRegion);
    return this.syncWithOneOf(local.length > 0 ? local : live);
  }

  /** One round with a random live peer of another region (none when there is no other region). */
  async runCrossRegionRound(): Promise<RoundResult | undefined> {
    return this.syncWithOneOf(this.components.livePeers().filter((peer) => peer.region !== this.init.selfRegion));
  }

  private syncWithOneOf(peers: PeerDescriptor[]): Promise<RoundResult | undefined> {
    if (peers.length === 0) return Promise.resolve(undefined);
    return this.syncWith(peers[randomInt(this.components.rng, peers.length)]!);
  }

  /**
   * Compares with one peer and exchanges whatever differs. Failures are counted, not thrown.
   * One round per peer at a time, except that `evenIfBusy` (contact just came back) starts one
   * beside a round whose calls may be stuck in the cut until they time out; never more than two.
   *
   * A round that leaves differing buckets for later (`maxBucketsPerRound`: after a long
   * partition, or with a peer far behind) is followed at once by the next, up to as many
   * rounds as it takes to cover every bucket: a heal does not wait an interval per quarter of
   * the registry. The answer is the last round's, with the records of them all.
   */
  async syncWith(peer: PeerDescriptor, options: { evenIfBusy?: boolean; closing?: boolean } = {}): Promise<RoundResult | undefined> {
    const busy = this.syncing.has(peer.id);
    if (busy && (!options.evenIfBusy || this.urgent.has(peer.id))) return undefined;
    const guard = busy ? this.urgent : this.syncing;
    const closing = options.closing === true;
    guard.add(peer.id);
    try {
      let result = await this.exchange(peer, closing);
      this.record(result);
      this.components.reportContact(peer.id);
      const { bucketCount } = this.components.registry.store.digest;
      let pulled = result.pulled;
      let pushed = result.pushed;
      for (let more = Math.ceil(bucketCount / this.init.maxBucketsPerRound); (result.work?.bucketsLeft ?? 0) > 0 && more > 0 && !this.stopped; more--) {
        result = await this.exchange(peer, closing);
        this.record(result);
        this.components.reportContact(peer.id);
        pulled += result.pulled;
        pushed += result.pushed;
      }
      return { ...result, pulled, pushed };
    } catch (error) {
      this.stats.failures += 1;
      this.log.debug({ peer: peer.id, error: (error as Error).message }, 'anti-entropy round failed');
      return undefined;
    } finally {
      guard.delete(peer.id);
    }
  }

  /**
   * A caller's digest: equal roots match; otherwise every bucket hash, unless this peer's
   * registry is known to be partial (`settled` false: its start-up sync is receiving) and the
   * caller's round is a periodic one. Then it answers `syncing` and the caller's round ends
   * there. Compared with a partial registry, a periodic round would have the caller list and
   * push what the sync is about to bring anyway: at 1,000,000 instances the serving peer of a
   * join pushed it a second time, beside the stream (bench/findings.md, 2026-12-07 evening).
   * The round that ends a caller's own start-up sync (`closing`) is answered whole, syncing or
   * not: peers that restart together each end their sync with one against a peer that is
   * itself still syncing, and none may report ready without it.
   */
  handleDigest(request: DigestRequest, settled = true): DigestResponse {
    const { digest } = this.components.registry.store;
    if (request.root === digest.rootHash()) return { match: true };
    if (!settled && request.closing !== true) return { match: false, syncing: true };
    return { match: false, buckets: digest.encodeBuckets() };
  }

  handleSubdigest(request: SubdigestRequest): SubdigestResponse {
    return { hashes: this.components.registry.store.digest.encodeSubBuckets(request.buckets) };
  }

  /**
   * A peer's `reconcile`: the records of its buckets newer here (at most
   * `RECONCILE_ANSWER_RECORDS` for a part of a round), and the keys it holds newer. The records of the caller's
   * round are found in one pass over the store, in slices, kept for the round's other parts
   * (`RoundListings`); a record replaced since is sent as it is stored now, one purged since is
   * left out, one added since is missed (the next round compares again).
   */
  async handleReconcile(request: ReconcileRequest): Promise<ReconcileResponse> {
    const { store } = this.components.registry;
    const local = await this.listings.entriesIn(request.from, request.buckets, request.subBuckets, request.round);
    await this.turns.next();
    const { newerHere, newerThere } = diffEntries(local, request.entries);
    const view = this.components.registry.leaseView();
    const records: WireRecord[] = [];
    // A part of a round is bounded; an older caller's whole round in one call is answered whole, as before.
    const most = request.round === undefined ? Infinity : RECONCILE_ANSWER_RECORDS;
    for (const entry of newerHere) {
      if (records.length === most) break;
      const current = store.get(entry.record);
      if (current) records.push(toWireRecord(current, view));
    }
    return { records, want: newerThere };
  }

  async handleSnapshot(request: SnapshotRequest, members: PeerDescriptor[]): Promise<SnapshotResponse> {
    const bucketCount = this.components.registry.store.digest.bucketCount;
    const start = Math.min(bucketCount, request.fromBucket);
    const end = Math.min(bucketCount, start + Math.max(1, request.bucketSpan));
    const page = await this.snapshotPages.page(request.from, start, end);
    const view = this.components.registry.leaseView();
    return {
      records: page.entries.map((entry) => toWireRecord(entry, view)),
      nextBucket: page.nextBucket >= bucketCount ? null : page.nextBucket,
      members,
    };
  }

  private async exchange(peer: PeerDescriptor, closing: boolean): Promise<RoundResult> {
    const { registry, clock } = this.components;
    const { digest } = registry.store;
    const call = <M extends PeerMethod>(method: M, request: PeerRequest<M> | EncodedRequest<M>) => this.call(peer, method, request);

    const startedMs = clock.nowMs();
    const answer = await call('digest', { from: this.init.selfId, root: digest.rootHash(), ...(closing ? { closing: true as const } : {}) });
    if (answer.match) return { peer: peer.id, inSync: true, pulled: 0, pushed: 0 };
    if (answer.syncing) return { peer: peer.id, inSync: false, deferred: true, pulled: 0, pushed: 0 };
    const digestDoneMs = clock.nowMs();
    const differing = answer.buckets === undefined ? null : digest.differingBuckets(answer.buckets);
    if (differing === null) throw new Error(`peer ${peer.id} sent a digest of another size`);
    if (differing.length === 0) return { peer: peer.id, inSync: true, pulled: 0, pushed: 0 };

    const chosen = shuffled(this.components.rng, differing).slice(0, this.init.maxBucketsPerRound);
    const subBuckets = await this.differingSubBuckets(peer, chosen);
    const totals = await reconcileInParts(
      {
        selfId: this.init.selfId,
        peerId: peer.id,
        registry,
        inbox: this.components.inbox,
        scans: this.scans,
        turns: this.turns,
        batchMaxRecords: this.init.pushBatchMaxRecords,
        reconcile: (request) => call('reconcile', request),
        replicate: (push) => call('replicate', push),
      },
      chosen,
      subBuckets,
    );
    const work: RoundWork = {
      differingBuckets: differing.length,
      bucketsLeft: differing.length - chosen.length,
      differingSubBuckets: subBuckets === null ? null : subBuckets.length,
      entriesSent: totals.entriesSent,
      parts: totals.parts,
      digestMs: digestDoneMs - startedMs,
      reconcileMs: clock.nowMs() - digestDoneMs,
    };
    return { peer: peer.id, inSync: false, pulled: totals.pulled, pushed: totals.pushed, work };
  }

  /**
   * The sub-buckets of `buckets` whose hashes differ between this peer and `peer`, or null
   * when `peer` runs a version without `subdigest` (it answers 400): the reconcile then
   * lists whole buckets.
   */
  private async differingSubBuckets(peer: PeerDescriptor, buckets: number[]): Promise<number[] | null> {
    let theirs: string;
    try {
      theirs = (await this.call(peer, 'subdigest', { from: this.init.selfId, buckets })).hashes;
    } catch (error) {
      if (error instanceof PeerCallError && (error.status === 400 || error.status === 404)) return null;
      throw error;
    }
    const differing = this.components.registry.store.digest.differingSubBuckets(buckets, theirs);
    if (differing === null) throw new Error(`peer ${peer.id} sent sub-bucket hashes of another size`);
    return differing;
  }

  /** One call to `peer`, with the anti-entropy call timeout. */
  private call<M extends PeerMethod>(peer: PeerDescriptor, method: M, request: PeerRequest<M> | EncodedRequest<M>): Promise<ReceivedAnswer<M>> {
    return callPeer(this.components.transport, peer, method, request, { timeoutMs: this.init.callTimeoutMs });
  }

  private record(result: RoundResult): void {
    const nowMs = this.components.clock.nowMs();
    this.stats.rounds += 1;
    this.stats.lastRoundAtMs = nowMs;
    if (result.inSync) {
      this.stats.roundsInSync += 1;
      return;
    }
    if (result.deferred) {
      this.stats.roundsDeferred += 1;
      return;
    }
    this.stats.keysPulled += result.pulled;
    this.stats.keysPushed += result.pushed;
    if (result.pulled + result.pushed > 0) {
      this.stats.lastRepairAtMs = nowMs;
      this.log.info({ peer: result.peer, pulled: result.pulled, pushed: result.pushed, ...result.work }, 'anti-entropy repaired keys');
    }
  }

  private scheduleLocal(): void {
    if (this.stopped) return;
    const delayMs = withJitter(this.components.rng, this.init.intervalMs, 0.5);
    this.timer = this.components.clock.setTimeout(() => {
      void this.runRound().finally(() => this.scheduleLocal());
    }, delayMs);
  }

  private scheduleCrossRegion(): void {
    if (this.stopped) return;
    const delayMs = withJitter(this.components.rng, this.init.crossRegionIntervalMs, 0.5);
    this.crossTimer = this.components.clock.setTimeout(() => {
      void this.runCrossRegionRound().finally(() => this.scheduleCrossRegion());
    }, delayMs);
  }
}
