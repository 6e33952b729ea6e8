import type { Clock } from '../clock/clock.js';
import { describeError } from './calls.js';
import { classifyStatus, parseRetryAfterMs, type FailureReason } from './failover.js';
import type { HttpLayer } from './http.js';
import { parseInstance, WireError, type SnapshotMessage } from './wire.js';

/** Longest one long poll waits for a change (the peer caps it at `cluster.longPollMaxWaitMs`). */
export const LONG_POLL_WAIT_MS = 30_000;

/** How a round of long polling ended. */
export type PollEnd =
  | { kind: 'done' }
  | { kind: 'cut' }
  | { kind: 'failed'; reason: FailureReason; message: string; retryAfterMs?: number };

export interface LongPollRound {
  http: HttpLayer;
  clock: Clock;
  namespace: string;
  requestTimeoutMs: number;
  peer: string;
  services: readonly string[];
  /** Until when to poll (then the stream is tried again). */
  untilMs: number;
  /** Aborted when the watch is closed or restarted. */
  signal: AbortSignal;
  heard(): void;
  snapshot(message: SnapshotMessage): void;
}

/**
 * The watch's fallback when a peer refuses the stream because it serves as many watchers as
 * it may (429 REG_ERR_TOO_MANY_WATCHERS): push-pull. Each watched service is long-polled on
 * the same peer (`GET /v1/services/{service}?status=all&index=<revision>&wait=...`, which has
 * its own budget there); every answer with a new revision replaces the service's list like a
 * stream snapshot. Ends at `untilMs` (the stream is tried again), when cut, or at the first
 * failure (which then fails the peer over like a failed stream).
 */
export async function longPollUntil(round: LongPollRound): Promise<PollEnd> {
  const local = new AbortController();
  const onAbort = () => local.abort(new Error('cut'));
  round.signal.addEventListener('abort', onAbort, { once: true });
  // At `untilMs` the polls still waiting are ended: the stream is tried next.
  const over = round.clock.setTimeout(() => local.abort(new Error('over')), Math.max(0, round.untilMs - round.clock.nowMs()));
  let failure: PollEnd | undefined;
  try {
    await Promise.all(
      round.services.map(async (service) => {
        const end = await pollService(round, service, local.signal);
        if (end.kind === 'failed' && failure === undefined) {
          failure = end;
          local.abort(new Error('failed'));
        }
      }),
    );
  } finally {
    over.cancel();
    round.signal.removeEventListener('abort', onAbort);
  }
  if (round.signal.aborted) return { kind: 'cut' };
  return failure ?? { kind: 'done' };
}

async function pollService(round: LongPollRound, service: string, signal: AbortSignal): Promise<PollEnd> {
  const { clock, http } = round;
  let index: number | undefined;
  while (!signal.aborted && clock.nowMs() < round.untilMs) {
    const waitMs = Math.max(1, Math.min(LONG_POLL_WAIT_MS, round.untilMs - clock.nowMs()));
    const query = `namespace=${encodeURIComponent(round.namespace)}&status=all${index === undefined ? '' : `&index=${index}&wait=${waitMs}ms`}`;
    const request = new AbortController();
    const onAbort = () => request.abort(new Error('cut'));
    signal.addEventListener('abort', onAbort, { once: true });
    // The peer answers by `wait` plus 1/16 of it; past that and the request timeout it is dead.
    let timedOut = false;
    const timer = clock.setTimeout(
      () => {
        timedOut = true;
        request.abort(new Error('timeout'));
      },
      (index === undefined ? 0 : waitMs + Math.ceil(waitMs / 16)) + round.requestTimeoutMs,
    );
    try {
      const response = await http.request(round.peer, { method: 'GET', path: `/v1/services/${encodeURIComponent(service)}?${query}`, signal: request.signal });
      const text = await response.text();
      if (response.status !== 200) {
        const verdict = classifyStatus(response.status);
        return {
          kind: 'failed',
          reason: verdict.kind === 'failover' ? verdict.reason : 'bad-response',
          message: `long poll answered ${response.status}: ${text.slice(0, 200)}`,
          retryAfterMs: parseRetryAfterMs(response.headers['retry-after'], clock.nowMs()),
        };
      }
      const body = JSON.parse(text) as { revision?: unknown; instances?: unknown };
      if (typeof body.revision !== 'number' || !Array.isArray(body.instances)) throw new WireError('listing: no revision or instances');
      round.heard();
      if (body.revision !== index) {
        round.snapshot({ type: 'snapshot', service, revision: body.revision, instances: body.instances.map((item) => parseInstance(item, 'listing.instances[]')) });
      }
      index = body.revision;
    } catch (error) {
      if (signal.aborted) return { kind: 'cut' };
      if (timedOut) return { kind: 'failed', reason: 'timeout', message: `no long-poll answer within ${round.requestTimeoutMs} ms past its wait` };
      if (error instanceof WireError || error instanceof SyntaxError) return { kind: 'failed', reason: 'bad-response', message: (error as Error).message };
      return { kind: 'failed', reason: 'connection', message: describeError(error) };
    } finally {
      timer.cancel();
      signal.removeEventListener('abort', onAbort);
    }
  }
  return signal.aborted ? { kind: 'cut' } : { kind: 'done' };
}
