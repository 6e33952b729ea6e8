/**
 * How peers talk. One request/response call per peer-API method; production sends it over
 * HTTP with undici (http-transport.ts), the cluster tests through a simulated network in
 * one process (test/support/sim-network.ts). Either way the receiving side runs the same
 * `PeerApi.handle`, so tests exercise the production replication code.
 */
export const peerMethods = ['replicate', 'ping', 'ping-req', 'digest', 'reconcile', 'snapshot'] as const;
export type PeerMethod = (typeof peerMethods)[number];

/** Where a peer is and what it is: gossiped between peers and listed in `/v1/cluster`. */
export interface PeerDescriptor {
  id: string;
  url: string;
  region: string;
  zone: string;
}

export interface CallOptions {
  /** Give up (and fail with a timeout) after this long. */
  timeoutMs: number;
}

/** Sends one call to a peer and returns its parsed answer; throws a `PeerCallError` on failure. */
export interface PeerTransport {
  call(peer: PeerDescriptor, method: PeerMethod, body: unknown, options: CallOptions): Promise<unknown>;
  /** Releases sockets (HTTP) or registrations (simulated). */
  close?(): Promise<void>;
  /** Calls and bytes exchanged with each peer so far, when the transport counts them. */
  trafficByPeer?(): Record<string, { calls: number; bytesSent: number; bytesReceived: number }>;
}

/** The receiving side of the peer API: what the HTTP peer routes and the simulated network call. */
export interface PeerApi {
  handle(method: PeerMethod, body: unknown): Promise<unknown>;
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
