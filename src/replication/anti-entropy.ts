import { sleep, type Clock, type TimerHandle } from '../clock/clock.js';
import { randomInt, shuffled, withJitter, type Rng } from '../clock/rng.js';
import { compareVersions } from '../clock/hlc.js';
import type { Logger } from '../log/logger.js';
import type { Registry } from '../registry/registry.js';
import { instanceKeyString, type StoredInstance } from '../registry/types.js';
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
import { bucketOfSub, SUB_BUCKETS } from '../registry/digest.js';
import { SnapshotPages } from './snapshot-pages.js';
import type { Inbox } from './inbox.js';
import { encodeReplicate, parseKeyString, toWireRecord } from './wire.js';

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

/**
 * Stored records a reconcile scan reads between two yields to the event loop. Finding the
 * records of some buckets is one pass over the whole store, on both sides of a round: at
 * 1,000,000 records, in one piece, a reconcile held a heartbeat up to 736 ms, in slices 188 ms
 * (bench/loop-stalls.ts, one outlier each, shared 2-core box under load).
 */
export const RECONCILE_SCAN_SLICE_RECORDS = 20_000;

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
  lastRoundAtMs: number | null;
  lastRepairAtMs: number | null;
}

export interface RoundResult {
  peer: string;
  inSync: boolean;
  pulled: number;
  pushed: number;
  /** Where a repairing round's time went (absent when the digests matched). */
  work?: RoundWork;
}

/** What a repairing round exchanged and how long each step took, for its log line. */
export interface RoundWork {
  differingBuckets: number;
  /** Sub-buckets that differ within them (null: the peer reconciles whole buckets). */
  differingSubBuckets: number | null;
  /** `[key, version, deleted]` entries sent in the reconcile call. */
  entriesSent: number;
  digestMs: number;
  reconcileMs: number;
  pushMs: number;
}

/**
 * Which keys differ between the records this peer holds in some buckets and the caller's
 * `[key, version, deleted]` entries for the same buckets. Pure.
 */
export function diffEntries(
  local: Iterable<StoredInstance>,
  remote: readonly DigestEntry[],
): { newerHere: StoredInstance[]; newerThere: string[] } {
  const remoteVersions = new Map<string, string>();
  for (const [key, version] of remote) remoteVersions.set(key, version);
  const newerHere: StoredInstance[] = [];
  const newerThere: string[] = [];
  for (const entry of local) {
    const key = instanceKeyString(entry.record);
    const theirs = remoteVersions.get(key);
    remoteVersions.delete(key);
    if (theirs === undefined) newerHere.push(entry);
    else {
      const order = compareVersions(entry.record.version, theirs);
      if (order > 0) newerHere.push(entry);
      else if (order < 0) newerThere.push(key);
    }
  }
  for (const key of remoteVersions.keys()) newerThere.push(key);
  return { newerHere, newerThere };
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
    lastRoundAtMs: null,
    lastRepairAtMs: null,
  };
  private timer: TimerHandle | undefined;
  private crossTimer: TimerHandle | undefined;
  private stopped = true;
  private readonly syncing = new Set<string>();
  /** Peers with a second round started beside a busy one (see `syncWith`). */
  private readonly urgent = new Set<string>();
  private readonly log: Logger;
  private readonly snapshotPages: SnapshotPages;

  constructor(
    private readonly components: AntiEntropyComponents,
    private readonly init: AntiEntropyInit,
  ) {
    this.log = components.logger.child({ component: 'anti-entropy' });
    this.snapshotPages = new SnapshotPages(components.registry.store, components.clock);
  }

  start(): void {
    this.stopped = false;
    this.scheduleLocal();
    this.scheduleCrossRegion();
  }

  stop(): void {
    this.stopped = true;
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
   */
  async syncWith(peer: PeerDescriptor, options: { evenIfBusy?: boolean } = {}): Promise<RoundResult | undefined> {
    const busy = this.syncing.has(peer.id);
    if (busy && (!options.evenIfBusy || this.urgent.has(peer.id))) return undefined;
    const guard = busy ? this.urgent : this.syncing;
    guard.add(peer.id);
    try {
      const result = await this.exchange(peer);
      this.record(result);
      this.components.reportContact(peer.id);
      return result;
    } catch (error) {
      this.stats.failures += 1;
      this.log.debug({ peer: peer.id, error: (error as Error).message }, 'anti-entropy round failed');
      return undefined;
    } finally {
      guard.delete(peer.id);
    }
  }

  handleDigest(request: DigestRequest): DigestResponse {
    const { digest } = this.components.registry.store;
    if (request.root === digest.rootHash()) return { match: true };
    return { match: false, buckets: digest.encodeBuckets() };
  }

  handleSubdigest(request: SubdigestRequest): SubdigestResponse {
    return { hashes: this.components.registry.store.digest.encodeSubBuckets(request.buckets) };
  }

  /**
   * A peer's `reconcile`: the records of its buckets newer here, and the keys it holds newer.
   * The store is scanned in slices (`entriesIn`); a record replaced while the scan was
   * suspended is sent as it is stored now, one purged meanwhile is left out (the next round
   * compares again).
   */
  async handleReconcile(request: ReconcileRequest): Promise<ReconcileResponse> {
    const local = await this.entriesIn(new Set(request.buckets), request.subBuckets && new Set(request.subBuckets));
    const { newerHere, newerThere } = diffEntries(local, request.entries);
    const { store } = this.components.registry;
    const view = this.components.registry.leaseView();
    const records: WireRecord[] = [];
    for (const entry of newerHere) {
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

  private async exchange(peer: PeerDescriptor): Promise<RoundResult> {
    const { registry, inbox, clock } = this.components;
    const { digest } = registry.store;
    const call = <M extends PeerMethod>(method: M, request: PeerRequest<M>) => this.call(peer, method, request);

    const startedMs = clock.nowMs();
    const answer = await call('digest', { from: this.init.selfId, root: digest.rootHash() });
    if (answer.match) return { peer: peer.id, inSync: true, pulled: 0, pushed: 0 };
    const digestDoneMs = clock.nowMs();
    const differing = answer.buckets === undefined ? null : digest.differingBuckets(answer.buckets);
    if (differing === null) throw new Error(`peer ${peer.id} sent a digest of another size`);
    if (differing.length === 0) return { peer: peer.id, inSync: true, pulled: 0, pushed: 0 };

    const chosen = shuffled(this.components.rng, differing).slice(0, this.init.maxBucketsPerRound);
    const subBuckets = await this.differingSubBuckets(peer, chosen);
    const local = await this.entriesIn(new Set(chosen), subBuckets === null ? undefined : new Set(subBuckets));
    const entries: DigestEntry[] = local.map((entry) => [
      instanceKeyString(entry.record),
      entry.record.version,
      entry.record.deleted === null ? 0 : 1,
    ]);
    const theirs = await call('reconcile', {
      from: this.init.selfId,
      buckets: chosen,
      ...(subBuckets === null ? {} : { subBuckets }),
      entries,
    });
    const pulled = inbox.apply(peer.id, theirs.records, 'repair').applied;
    const reconcileDoneMs = clock.nowMs();

    const wanted: StoredInstance[] = [];
    for (const keyString of theirs.want) {
      const key = parseKeyString(keyString);
      const entry = key && registry.store.get(key);
      if (entry) wanted.push(entry);
    }
    // Each push encoded as it goes (the record as stored then, its lease as of then): the wire
    // copies of a large repair are never all held at once, nor across the calls.
    for (let i = 0; i < wanted.length; i += this.init.pushBatchMaxRecords) {
      const push = encodeReplicate(this.init.selfId, wanted.slice(i, i + this.init.pushBatchMaxRecords), registry.leaseView(), true);
      await this.call(peer, 'replicate', push);
    }
    const work: RoundWork = {
      differingBuckets: differing.length,
      differingSubBuckets: subBuckets === null ? null : subBuckets.length,
      entriesSent: entries.length,
      digestMs: digestDoneMs - startedMs,
      reconcileMs: reconcileDoneMs - digestDoneMs,
      pushMs: clock.nowMs() - reconcileDoneMs,
    };
    return { peer: peer.id, inSync: false, pulled, pushed: wanted.length, work };
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

  /**
   * The stored instances in `buckets` and, when given, in `subBuckets` of them: one pass over
   * the store, in slices of `RECONCILE_SCAN_SLICE_RECORDS` that yield between them.
   */
  private async entriesIn(buckets: ReadonlySet<number>, subBuckets?: ReadonlySet<number>): Promise<StoredInstance[]> {
    const out: StoredInstance[] = [];
    const yieldTurn = this.components.yieldTurn ?? (() => sleep(this.components.clock, 0));
    const wanted = wantedSubBuckets(this.components.registry.store.digest.bucketCount, buckets, subBuckets);
    let inSlice = 0;
    for (const service of this.components.registry.store.allServices()) {
      for (const entry of service.instances.values()) {
        if (inSlice === RECONCILE_SCAN_SLICE_RECORDS) {
          await yieldTurn();
          inSlice = 0;
        }
        inSlice += 1;
        if (wanted[entry.subBucket] === 1) out.push(entry);
      }
    }
    return out;
  }

  private record(result: RoundResult): void {
    const nowMs = this.components.clock.nowMs();
    this.stats.rounds += 1;
    this.stats.lastRoundAtMs = nowMs;
    if (result.inSync) {
      this.stats.roundsInSync += 1;
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

/**
 * The sub-buckets a reconcile lists, one byte each (1: listed): those of `buckets` and, when
 * given, only those also in `subBuckets`. A scan then asks one array per record instead of two
 * `Set`s: at 1,000,000 records 12-22 ms against 46-50 ms (`npx tsx bench/registry-passes.ts`,
 * 2026-12-05). Numbers out
 * of the digest's range (a peer's request may carry any) list nothing.
 */
export function wantedSubBuckets(bucketCount: number, buckets: ReadonlySet<number>, subBuckets?: ReadonlySet<number>): Uint8Array {
  const wanted = new Uint8Array(bucketCount * SUB_BUCKETS);
  const inRange = (n: number, size: number) => Number.isInteger(n) && n >= 0 && n < size;
  if (subBuckets === undefined) {
    for (const bucket of buckets) if (inRange(bucket, bucketCount)) wanted.fill(1, bucket * SUB_BUCKETS, (bucket + 1) * SUB_BUCKETS);
  } else {
    for (const sub of subBuckets) if (inRange(sub, wanted.length) && buckets.has(bucketOfSub(sub))) wanted[sub] = 1;
  }
  return wanted;
}
