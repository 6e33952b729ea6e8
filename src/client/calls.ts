import type { Clock } from '../clock/clock.js';
import { linkedAbort, pause } from './abort.js';
import { closedError, RegistryClientError } from './errors.js';
import { classifyStatus, parseRetryAfterMs, type FailureReason } from './failover.js';
import type { HttpLayer, HttpMethod } from './http.js';
import type { ClientLogger } from './logger.js';
import type { PeerSelector } from './peers.js';

export interface PeerRequest {
  method: HttpMethod;
  path: string;
  /** Sent as JSON. */
  body?: unknown;
}

/** An answer that is not a reason to fail over: a 2xx (body parsed) or a 4xx for the caller to judge. */
export interface PeerAnswer {
  status: number;
  body: unknown;
  peer: string;
}

/** One try at one peer. */
export type Attempt = { ok: true; answer: PeerAnswer } | { ok: false; reason: FailureReason; message: string; retryAfterMs?: number };

export interface PeerCallerInit {
  /** How long one request to one peer may take (connect, headers and body). */
  requestTimeoutMs: number;
  /** How long a call may keep failing over (and waiting for backing-off peers) before it gives up. */
  failoverBudgetMs: number;
}

/**
 * JSON calls to the registry with failover: the current peer first, the next ones on
 * connection errors, timeouts, 5xx and 429, waiting when every peer is backing off, until
 * the call's budget runs out. Every timeout runs on the injected clock.
 */
export class PeerCaller {
  constructor(
    private readonly components: { http: HttpLayer; clock: Clock; selector: PeerSelector; logger: ClientLogger },
    readonly init: PeerCallerInit,
  ) {}

  /**
   * Resolves with the first answer that is not a failover reason. Throws
   * REG_CLIENT_ERR_NO_PEER_AVAILABLE when the budget runs out, REG_CLIENT_ERR_CLOSED when
   * `signal` aborts.
   */
  async call(request: PeerRequest, options: { budgetMs?: number; signal?: AbortSignal } = {}): Promise<PeerAnswer> {
    const { clock, selector } = this.components;
    const deadlineMs = clock.nowMs() + (options.budgetMs ?? this.init.failoverBudgetMs);
    let last: { peer: string; message: string } | undefined;
    for (;;) {
      if (options.signal?.aborted) throw closedError();
      const remainingMs = deadlineMs - clock.nowMs();
      const choice = selector.choose();
      if ('waitMs' in choice) {
        if (choice.waitMs >= remainingMs) break;
        await pause(clock, choice.waitMs, options.signal);
        continue;
      }
      if (remainingMs <= 0) break;
      const attempt = await this.attempt(choice.peer, request, Math.min(this.init.requestTimeoutMs, remainingMs), options.signal);
      if (attempt.ok) {
        selector.succeeded(choice.peer);
        return attempt.answer;
      }
      if (options.signal?.aborted) throw closedError();
      selector.failed(choice.peer, attempt.reason, attempt.retryAfterMs);
      last = { peer: choice.peer, message: attempt.message };
    }
    throw new RegistryClientError(
      'REG_CLIENT_ERR_NO_PEER_AVAILABLE',
      `${request.method} ${request.path}: no peer answered${last ? `; last, ${last.peer}: ${last.message}` : ' (every peer is backing off)'}`,
      { peer: last?.peer },
    );
  }

  /** One request to one peer, within `timeoutMs`; never throws but for a programming error. */
  async attempt(peer: string, request: PeerRequest, timeoutMs: number, signal?: AbortSignal): Promise<Attempt> {
    const { http, clock } = this.components;
    const { controller, release } = linkedAbort(signal);
    let timedOut = false;
    const timer = clock.setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('timeout'));
    }, timeoutMs);
    try {
      const response = await http.request(peer, {
        method: request.method,
        path: request.path,
        headers: request.body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: controller.signal,
      });
      const text = await response.text();
      const verdict = classifyStatus(response.status);
      if (verdict.kind === 'failover') {
        return {
          ok: false,
          reason: verdict.reason,
          message: `answered ${response.status}: ${text.slice(0, 200)}`,
          retryAfterMs: parseRetryAfterMs(response.headers['retry-after'], clock.nowMs()),
        };
      }
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        if (response.status < 300) return { ok: false, reason: 'bad-response', message: `answered ${response.status} with a body that is not JSON` };
        body = text;
      }
      return { ok: true, answer: { status: response.status, body, peer } };
    } catch (error) {
      if (timedOut) return { ok: false, reason: 'timeout', message: `no answer within ${timeoutMs} ms` };
      return { ok: false, reason: 'connection', message: describeError(error) };
    } finally {
      timer.cancel();
      release();
    }
  }
}

/** The error a peer's `{code, message}` answer stands for (a 4xx the client cannot fix itself). */
export function answerError(answer: PeerAnswer, what: string): RegistryClientError {
  const body = answer.body as { code?: unknown; message?: unknown } | undefined;
  const code = typeof body?.code === 'string' ? body.code : `HTTP_${answer.status}`;
  const message = typeof body?.message === 'string' ? body.message : `answered ${answer.status}`;
  return new RegistryClientError(code, `${what}: ${message}`, { status: answer.status, peer: answer.peer });
}

export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
