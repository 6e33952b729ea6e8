/*
 * How peers talk. One request/response call per peer-API method (peer-calls.ts); production
 * sends it over HTTP with undici (http-transport.ts), the cluster tests through a simulated
 * network in one process (test/support/sim-network.ts). Either way the receiving side runs the
 * same `PeerApi.handle`, so tests exercise the production replication code.
 */
import type { PeerTrafficCounts } from './peer-traffic.js';
import type { PeerAnswer, PeerDescriptor, PeerMethod, PeerRequest } from './peer-calls.js';

export { peerMethods, type PeerDescriptor, type PeerMethod } from './peer-calls.js';

export interface CallOptions {
  /** Give up (and fail with a timeout) after this long. */
  timeoutMs: number;
}

/** `POST /v1/peer/snapshot-stream`: the caller's id; the answer is NDJSON (replication/snapshot-frames.ts). */
export interface SnapshotStreamRequest {
  from: string;
}

/** Limits of one streamed answer. */
export interface StreamOptions {
  /** Fail when the answer's status, or the next bytes of its body, take longer than this. */
  idleTimeoutMs: number;
  /** Fail when the whole stream takes longer than this. */
  maxDurationMs: number;
  /** Fail on a line longer than this many bytes, before holding more of it. */
  maxLineBytes: number;
}

/**
 * A request already encoded as JSON, for a caller whose request is built from many objects it
 * must not keep alive while the call is out: a replication batch's wire records (copies of the
 * records with their leases) live while it is built instead of for the round trip (issue 36).
 * `items` is how many records it carries, for the caller's counts.
 */
export class EncodedRequest<M extends PeerMethod> {
  declare readonly method?: M;
  constructor(
    readonly json: string,
    readonly items: number,
  ) {}
}

/** What a request body is as JSON text: an encoded request's own, anything else stringified. */
export function requestJson(body: unknown): string {
  return body instanceof EncodedRequest ? body.json : JSON.stringify(body);
}

/**
 * Sends one call to a peer and returns its answer as parsed JSON; throws a `PeerCallError` on
 * failure. The answer is another process's word, unchecked: callers go through `callPeer`
 * (peer-answers.ts), which checks it once per call name and types it.
 */
export interface PeerTransport {
  call<M extends PeerMethod>(peer: PeerDescriptor, method: M, body: PeerRequest<M> | EncodedRequest<M>, options: CallOptions): Promise<unknown>;
  /**
   * Opens the peer's start-up snapshot stream and yields its lines (without their newline),
   * unparsed, as they come; throws a `PeerCallError` (with the status when the peer answered
   * one: an older peer answers 400, 404 or 405). Absent on a transport that cannot stream: the
   * caller uses snapshot pages.
   */
  streamSnapshot?(peer: PeerDescriptor, request: SnapshotStreamRequest, options: StreamOptions): AsyncIterable<string>;
  /** Releases sockets (HTTP) or registrations (simulated). */
  close?(): Promise<void>;
  /** Calls and bytes exchanged with each peer so far, when the transport counts them. */
  trafficByPeer?(): Record<string, { calls: number; bytesSent: number; bytesReceived: number }>;
  /**
   * Bytes by peer, call and direction, when the transport counts them (HTTP): its calls, and
   * the answers the peer routes give (they count into it too). Read by `/metrics`.
   */
  readonly peerBytes?: PeerTrafficCounts;
}

/** The receiving side of the peer API: what the HTTP peer routes and the simulated network call. */
export interface PeerApi {
  /** `body` is the caller's JSON, unchecked: the handler checks it before anything is touched. */
  handle<M extends PeerMethod>(method: M, body: unknown): Promise<PeerAnswer<M>>;
  /**
   * Opens a start-up snapshot stream: its NDJSON lines, each ending in a newline. Throws a
   * `RegistryError` before the first line (a bad body, or `REG_ERR_SNAPSHOT_BUSY`). Absent on
   * an API that serves only pages. Its `return` frees the stream's slot, even before the
   * first line.
   */
  openSnapshotStream?(body: unknown): AsyncGenerator<string>;
}

/** Error codes a `PeerCallError` carries when the call timed out (as opposed to being refused). */
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** True when a peer call failed by timing out: the peer took the connection but did not answer in time. */
export function timedOut(error: unknown): boolean {
  return error instanceof PeerCallError && error.errorCode !== undefined && TIMEOUT_CODES.has(error.errorCode);
}

/** How a failed call failed, which decides whether and how soon to retry. */
export type FailureKind = 'congestion' | 'transient' | 'permanent';

/**
 * A failed peer call. `status` is the HTTP status when the peer answered; `kind` says what
 * to do about it (see `classifyFailure`).
 */
export class PeerCallError extends Error {
  constructor(
    message: string,
    readonly kind: FailureKind,
    readonly status?: number,
    readonly errorCode?: string,
  ) {
    super(message);
    this.name = 'PeerCallError';
  }
}

/**
 * Classifies the outcome of a call (Eureka's replication does the same): 429 and 503 are
 * congestion (back off, keep the work); other 5xx, timeouts and connection errors are
 * transient (retry with backoff); any other 4xx is permanent (the peer will never accept
 * this request as it is: drop it and count it; anti-entropy repairs what it carried).
 */
export function classifyFailure(status: number | undefined): FailureKind {
  if (status === 429 || status === 503) return 'congestion';
  if (status !== undefined && status >= 400 && status < 500) return 'permanent';
  // Other 5xx, and every network error (refused, reset, timed out): the peer may be
  // restarting or briefly unreachable.
  return 'transient';
}
