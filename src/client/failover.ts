import { cappedBackoffMs } from '../clock/backoff.js';

/**
 * The pure decisions of failover: which outcomes of a call to a peer mean "try another peer",
 * and how long a failing peer is left alone. The stateful code around them (peers.ts,
 * calls.ts, watch.ts) stays thin.
 */

/** Why a call to a peer counts as that peer failing. */
export type FailureReason =
  /** The connection could not be made or broke (refused, reset, closed mid-answer). */
  | 'connection'
  /** No answer within the request timeout (or a watch stream went silent). */
  | 'timeout'
  /** A 5xx answer (including 503 while the peer syncs). */
  | 'server-error'
  /** 429: the peer serves as many watchers as it may; it says when to come back. */
  | 'busy'
  /** A 2xx answer that is not what the API documents. */
  | 'bad-response'
  /** A watch stream that the peer ended (it shuts down). */
  | 'stream-ended';

/** What to do with an HTTP answer. */
export type StatusVerdict = { kind: 'answer' } | { kind: 'failover'; reason: FailureReason };

/**
 * 5xx and 429 move the client to another peer; 408 too (the peer gave up waiting for us).
 * Any other status, 4xx included, is an answer for the caller: another peer would say the
 * same about a bad request or an unknown instance.
 */
export function classifyStatus(status: number): StatusVerdict {
  if (status >= 500) return { kind: 'failover', reason: 'server-error' };
  if (status === 429) return { kind: 'failover', reason: 'busy' };
  if (status === 408) return { kind: 'failover', reason: 'timeout' };
  return { kind: 'answer' };
}

/**
 * A `Retry-After` header as milliseconds from `nowMs`: delta seconds or an HTTP date.
 * Undefined when absent or unreadable; never negative.
 */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1_000;
  // HTTP dates start with the day's name; Date.parse alone would read "-3" as a year.
  if (!/^[A-Za-z]{3}/.test(trimmed)) return undefined;
  const atMs = Date.parse(trimmed);
  if (Number.isNaN(atMs)) return undefined;
  return Math.max(0, atMs - nowMs);
}

export interface BackoffPolicy {
  /** Delay after a peer's first consecutive failure. */
  backoffBaseMs: number;
  /** The delay never grows past this. */
  backoffMaxMs: number;
}

/**
 * How long a peer is left alone after its n-th consecutive failure (n >= 1): capped
 * exponential, `min(max, base * 2^(n-1))`, with equal jitter (between half and all of it) so
 * that clients that lost a peer together do not come back together. `random` is in [0, 1).
 */
export function backoffDelayMs(consecutiveFailures: number, policy: BackoffPolicy, random: number): number {
  return cappedBackoffMs(consecutiveFailures, policy.backoffBaseMs, policy.backoffMaxMs, random);
}
