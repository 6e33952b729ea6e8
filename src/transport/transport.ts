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

/**
 * Sends one call to a peer and returns its answer as parsed JSON; throws a `PeerCallError` on
 * failure. The answer is another process's word, unchecked: callers go through `callPeer`
 * (peer-answers.ts), which checks it once per call name and types it.
 */
export interface PeerTransport {
  call<M extends PeerMethod>(peer: PeerDescriptor, method: M, body: PeerRequest<M>, options: CallOptions): Promise<unknown>;
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
