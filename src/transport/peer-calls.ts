import type { InstanceRecord } from '../registry/types.js';

/**
 * The peer API in one place: the name of every call, what it carries and what it answers.
 * Both sides are typed by `PeerCalls`: a caller's request and the answer it gets back
 * (`callPeer`, peer-answers.ts), a handler's answer (`PeerApi.handle`, replication/peer-service.ts).
 * The JSON on the wire is these shapes as they are: changing one changes the wire format
 * between versions (docs/upgrading.md).
 */
export const peerMethods = ['replicate', 'ping', 'ping-req', 'digest', 'subdigest', 'reconcile', 'snapshot', 'lease-check'] as const;
export type PeerMethod = (typeof peerMethods)[number];

/** Where a peer is and what it is: gossiped between peers and listed in `/v1/cluster`. */
export interface PeerDescriptor {
  id: string;
  url: string;
  region: string;
  zone: string;
}

/** A record as it travels between peers: the lease travels as milliseconds left, never as a time. */
export interface WireRecord extends InstanceRecord {
  leaseRemainingMs: number;
}

/** One entry of a digest exchange: `[key, version, deleted ? 1 : 0]`. */
export type DigestEntry = [string, string, 0 | 1];

/** `replicate`: records written (or repaired) at the caller, to apply here. */
export interface ReplicateRequest {
  from: string;
  records: WireRecord[];
  /** True when anti-entropy pushes repairs (not counted in the replication delay). */
  repair?: boolean;
}
export interface ReplicateResponse {
  applied: number;
  ignored: number;
  invalid: number;
}

/**
 * `ping`: "are you alive?", carrying the sender, a hash of the peer list it knows, and the
 * list itself only when the receiver's last known hash differs (peer lists rarely change, and
 * pings cross slow, costly links between regions every second or two).
 */
export interface PingRequest {
  from: PeerDescriptor;
  /** The sender's incarnation: a new one at every start, so a restart is noticed at once. */
  incarnation?: string;
  membersHash: string;
  members?: PeerDescriptor[];
}
export interface PingResponse {
  id: string;
  incarnation?: string;
  membersHash: string;
  /** Only when the caller's hash differs from the responder's. */
  members?: PeerDescriptor[];
}

/** `ping-req`: "please ping `target` for me" (SWIM's indirect probe). */
export interface PingReqRequest {
  from: string;
  target: PeerDescriptor;
}
export interface PingReqResponse {
  ok: boolean;
}

/** `digest`: the caller's root hash; equal replicas stop here. */
export interface DigestRequest {
  from: string;
  root: string;
  /**
   * The round that ends the caller's start-up sync: answered with the buckets even by a peer
   * that is itself syncing (see `DigestResponse.syncing`), so that peers restarting together
   * still compare before each reports ready. A peer of an older version ignores the field.
   */
  closing?: true;
}
export interface DigestResponse {
  match: boolean;
  /** Every bucket hash (base64), only when the roots differ. */
  buckets?: string;
  /**
   * The responder is receiving its start-up sync (its registry is known to be partial): no
   * hashes, and the caller ends its round at once. A peer of an older version reads this
   * answer as a digest of another size, a failed round: the same end.
   */
  syncing?: true;
}

/**
 * `subdigest`: the responder's sub-bucket hashes of the buckets that differ (`SUB_BUCKETS`
 * each, registry/digest.ts), so that the reconcile lists only the records of the sub-buckets
 * that differ. A peer of a version without it answers 400: the caller then reconciles whole
 * buckets, as every peer did before.
 */
export interface SubdigestRequest {
  from: string;
  buckets: number[];
}
export interface SubdigestResponse {
  /** `buckets.length * SUB_BUCKETS` hashes of 8 bytes, in the request's bucket order (base64). */
  hashes: string;
}

/**
 * `reconcile`: the caller's `[key, version, deleted]` entries of the buckets that differ; with
 * `subBuckets`, only of those sub-buckets of the buckets (the responder then compares only its
 * records in them).
 */
export interface ReconcileRequest {
  from: string;
  buckets: number[];
  subBuckets?: number[];
  /**
   * The sub-buckets of the whole round, when this call is one part of it: base64 of one bit per
   * sub-bucket of `buckets`, in that order (bit `i * 16 + n`, lowest bit first, is sub-bucket
   * `n` of `buckets[i]`). The answering peer lists those once for every part (round-listings.ts).
   */
  round?: string;
  entries: DigestEntry[];
}
export interface ReconcileResponse {
  /** Records the responder holds newer (or the caller lacks): the caller applies them. */
  records: WireRecord[];
  /** Keys the caller holds newer (or the responder lacks): the caller pushes them. */
  want: string[];
}

/** `snapshot`: one page of the responder's records, by digest bucket (the start-up sync). */
export interface SnapshotRequest {
  from: string;
  fromBucket: number;
  bucketSpan: number;
}
export interface SnapshotResponse {
  records: WireRecord[];
  /** The next bucket to ask for, or null when the snapshot is complete. */
  nextBucket: number | null;
  members: PeerDescriptor[];
  /**
   * False while the responder holds a registry it knows may be partial (its own start-up sync
   * has begun receiving and is not done, or failed midway): the caller merges the page but
   * does not count the pull as its sync's completion. Absent from a peer of an older version,
   * which reads as true.
   */
  settled?: boolean;
}

/**
 * `lease-check`: an owner about to evict instances whose lease ran out asks "do you hear
 * these?" (`[key, version]` of each, as the owner holds it). Heartbeats are not replicated, so a
 * client that moved to another peer while its owner lived is heard there only. The answer
 * carries the instances the responder took over because it hears their clients (same version
 * as the owner's, its local lease still running): the owner applies them and evicts the rest.
 */
export interface LeaseCheckRequest {
  from: string;
  entries: Array<[key: string, version: string]>;
}
export interface LeaseCheckResponse {
  /** The instances taken over here: the responder's new versions, owner = the responder. */
  records: WireRecord[];
}

/**
 * An answer whose records are not parsed yet: the inbox parses each one and counts the bad ones
 * (as for a `replicate` batch), so one bad record costs only itself, and the records are
 * checked once, not once at the boundary and again when applied.
 */
export type WithUnparsedRecords<T extends { records: WireRecord[] }> = Omit<T, 'records'> & { records: readonly unknown[] };

/** What one call carries: `answer` is what a handler returns, `received` what its caller gets after the check at the boundary. */
interface PeerCall {
  request: unknown;
  answer: unknown;
  received: unknown;
}

/** Every method of `peerMethods` has its entry (a missing one fails to compile). */
type EveryMethod<T extends Record<PeerMethod, PeerCall>> = T;

/**
 * Call name to request and answer types. `received` is the answer as another peer's JSON is
 * trusted to be once `checkAnswer` (peer-answers.ts) has looked at it: the same shape, except
 * record lists (parsed record by record by the inbox) and the `replicate` counts (which no
 * caller reads, so a peer answering other figures is not a failed batch).
 */
export type PeerCalls = EveryMethod<{
  replicate: { request: ReplicateRequest; answer: ReplicateResponse; received: Partial<ReplicateResponse> };
  ping: { request: PingRequest; answer: PingResponse; received: PingResponse };
  'ping-req': { request: PingReqRequest; answer: PingReqResponse; received: PingReqResponse };
  digest: { request: DigestRequest; answer: DigestResponse; received: DigestResponse };
  subdigest: { request: SubdigestRequest; answer: SubdigestResponse; received: SubdigestResponse };
  reconcile: { request: ReconcileRequest; answer: ReconcileResponse; received: WithUnparsedRecords<ReconcileResponse> };
  snapshot: { request: SnapshotRequest; answer: SnapshotResponse; received: WithUnparsedRecords<SnapshotResponse> & { settled: boolean } };
  'lease-check': { request: LeaseCheckRequest; answer: LeaseCheckResponse; received: WithUnparsedRecords<LeaseCheckResponse> };
}>;

export type PeerRequest<M extends PeerMethod> = PeerCalls[M]['request'];
export type PeerAnswer<M extends PeerMethod> = PeerCalls[M]['answer'];
export type ReceivedAnswer<M extends PeerMethod> = PeerCalls[M]['received'];
