import type { Clock, TimerHandle } from '../clock/clock.js';
import { pause } from './abort.js';
import { describeError } from './calls.js';
import { classifyStatus, parseRetryAfterMs, type FailureReason } from './failover.js';
import type { HttpLayer, HttpResponse } from './http.js';
import type { ClientLogger } from './logger.js';
import type { PeerSelector } from './peers.js';
import { SseParser } from './sse.js';
import { longPollUntil } from './watch-poll.js';
import { parseWatchMessage, WireError, type DeltaMessage, type SnapshotMessage } from './wire.js';

/** Where the stream's news goes (the discovery cache). */
export interface WatchTarget {
  connected(peer: string): void;
  heard(): void;
  applySnapshot(peer: string, message: SnapshotMessage): void;
  applyDelta(peer: string, message: DeltaMessage): void;
  disconnected(): void;
}

export interface WatchStreamInit {
  namespace: string;
  /** How long connecting (the readiness check, then the stream's headers) may take. */
  requestTimeoutMs: number;
  /** A stream silent for this long (no event, no keep-alive) is taken for dead. */
  idleTimeoutMs: number;
  /** Pause before reconnecting to the same peer after it dropped us for reading too slowly. */
  droppedPauseMs: number;
  /** Pause before trying again after a peer refused the watch itself (a 4xx). */
  rejectedPauseMs: number;
  /**
   * How long to long-poll a peer that refused the stream for serving too many watchers
   * before trying the stream again (at least its Retry-After). Default 30 s.
   */
  streamRetryMs?: number;
}

/** The default of `WatchStreamInit.streamRetryMs`. */
export const DEFAULT_STREAM_RETRY_MS = 30_000;

/** How one connection ended. */
type SessionEnd =
  | { kind: 'restart' }
  | { kind: 'closed' }
  | { kind: 'dropped' }
  | { kind: 'failed'; reason: FailureReason; message: string; retryAfterMs?: number }
  | { kind: 'rejected'; status: number; message: string }
  | { kind: 'busy'; retryAfterMs: number | undefined };

/** Why the client itself cut a connection. */
type CutReason = 'restart' | 'closed' | 'timeout' | 'idle';

/**
 * One `GET /v1/watch` stream for every watched service, kept open against the client's
 * current peer. When it fails (connection error, silence past `idleTimeoutMs`, 5xx, 429, the
 * peer ending it) the peer backs off and the stream reconnects to the next one, where the
 * new snapshot resyncs the cache. A `dropped` event (we read too slowly) reconnects to the
 * same peer. Watching another service restarts the stream with the longer list.
 *
 * Push-pull: a peer that refuses the stream because it serves as many watchers as it may
 * (429 REG_ERR_TOO_MANY_WATCHERS) is long-polled instead (watch-poll.ts), service by service,
 * for `streamRetryMs` (at least its Retry-After); then the stream is tried again.
 */
export class WatchStream {
  private services: string[] = [];
  private running = false;
  private closed = false;
  /** Cuts the current connection or pause. */
  private interrupt = new AbortController();
  private cutReason: CutReason | null = null;
  private restartQueued = false;
  private readonly log: ClientLogger;

  constructor(
    private readonly components: { http: HttpLayer; clock: Clock; selector: PeerSelector; logger: ClientLogger },
    private readonly init: WatchStreamInit,
    private readonly target: WatchTarget,
  ) {
    this.log = components.logger.child({ component: 'watch' });
  }

  /** The services watched now. */
  get watched(): readonly string[] {
    return this.services;
  }

  /**
   * Watches these services from now on; the stream (re)starts after the current microtask,
   * so several calls in a row cost one reconnection.
   */
  setServices(services: readonly string[]): void {
    if (this.closed) return;
    this.services = [...services];
    if (!this.running) {
      this.running = true;
      void this.run();
      return;
    }
    if (this.restartQueued) return;
    this.restartQueued = true;
    queueMicrotask(() => {
      this.restartQueued = false;
      this.cut('restart');
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cut('closed');
  }

  private cut(reason: CutReason): void {
    this.cutReason = reason;
    this.interrupt.abort(new Error(reason));
  }

  private async run(): Promise<void> {
    const { selector, clock } = this.components;
    while (!this.closed) {
      this.interrupt = new AbortController();
      this.cutReason = null;
      const choice = selector.choose();
      if ('waitMs' in choice) {
        await pause(clock, choice.waitMs, this.interrupt.signal);
        continue;
      }
      const peer = choice.peer;
      let end: SessionEnd;
      try {
        end = await this.session(peer);
      } catch (error) {
        // A bug in a callback path must not kill the stream for good.
        this.log.error({ peer, err: error }, 'watch session failed unexpectedly');
        end = { kind: 'failed', reason: 'connection', message: describeError(error) };
      }
      switch (end.kind) {
        case 'closed':
          return;
        case 'restart':
          break;
        case 'dropped':
          this.log.warn({ peer }, 'the peer dropped this watch for reading too slowly; reconnecting');
          await this.rest(this.init.droppedPauseMs);
          break;
        case 'rejected':
          this.log.error({ peer, status: end.status, message: end.message }, 'the peer refused the watch');
          await this.rest(this.init.rejectedPauseMs);
          break;
        case 'failed':
          this.log.debug({ peer, reason: end.reason, message: end.message }, 'watch stream failed');
          selector.failed(peer, end.reason, end.retryAfterMs);
          break;
        case 'busy': {
          const pollEnd = await this.longPoll(peer, end.retryAfterMs);
          if (pollEnd === 'closed') return;
          break;
        }
      }
    }
  }

  /** Waits (a new interrupt: the session's is spent), unless closed or restarted meanwhile. */
  private async rest(delayMs: number): Promise<void> {
    if (this.closed) return;
    this.interrupt = new AbortController();
    await pause(this.components.clock, delayMs, this.interrupt.signal);
  }

  /** One connection to one peer, from the readiness check to its end. */
  private async session(peer: string): Promise<SessionEnd> {
    const { http, clock, selector } = this.components;
    const signal = this.interrupt.signal;
    const connectTimer = clock.setTimeout(() => this.cut('timeout'), this.init.requestTimeoutMs);
    let idleTimer: TimerHandle | undefined;
    let connected = false;
    let response: HttpResponse | undefined;
    try {
      // A peer still syncing after a restart serves a partial list: its snapshot would report
      // live instances down. /readyz says 503 until it is done (anything else: go ahead).
      const ready = await http.request(peer, { method: 'GET', path: '/readyz', signal });
      await ready.dump();
      if (ready.status >= 500) return { kind: 'failed', reason: 'server-error', message: `not ready (${ready.status})` };
      const query = `services=${this.services.map(encodeURIComponent).join(',')}&namespace=${encodeURIComponent(this.init.namespace)}`;
      response = await http.request(peer, { method: 'GET', path: `/v1/watch?${query}`, headers: { accept: 'text/event-stream' }, signal });
      connectTimer.cancel();
      if (response.status !== 200) return await this.refused(response);
      if (!(response.headers['content-type'] ?? '').includes('text/event-stream')) {
        return { kind: 'failed', reason: 'bad-response', message: `answered ${response.headers['content-type']} instead of an event stream` };
      }
      selector.succeeded(peer);
      this.target.connected(peer);
      connected = true;
      this.log.debug({ peer, services: this.services }, 'watch stream connected');
      let lastByteAtMs = clock.nowMs();
      const checkIdle = () => {
        const silentMs = clock.nowMs() - lastByteAtMs;
        if (silentMs >= this.init.idleTimeoutMs) this.cut('idle');
        else idleTimer = clock.setTimeout(checkIdle, this.init.idleTimeoutMs - silentMs);
      };
      idleTimer = clock.setTimeout(checkIdle, this.init.idleTimeoutMs);
      const decoder = new TextDecoder();
      const parser = new SseParser();
      for await (const chunk of response.body) {
        lastByteAtMs = clock.nowMs();
        this.target.heard();
        for (const item of parser.push(decoder.decode(chunk, { stream: true }))) {
          if (item.kind !== 'event') continue;
          const message = parseWatchMessage(item.event, item.data);
          if (message?.type === 'dropped') return { kind: 'dropped' };
          if (message?.type === 'snapshot') this.target.applySnapshot(peer, message);
          else if (message?.type === 'delta') this.target.applyDelta(peer, message);
        }
        if (this.cutReason !== null) break;
      }
      if (this.cutReason !== null) return this.cutEnd();
      return { kind: 'failed', reason: 'stream-ended', message: 'the peer ended the stream' };
    } catch (error) {
      if (error instanceof WireError) return { kind: 'failed', reason: 'bad-response', message: error.message };
      if (this.cutReason !== null) return this.cutEnd();
      return { kind: 'failed', reason: 'connection', message: describeError(error) };
    } finally {
      connectTimer.cancel();
      idleTimer?.cancel();
      if (connected) this.target.disconnected();
      // Release the connection (a no-op when the stream already ended).
      if (!signal.aborted) this.interrupt.abort(new Error('session over'));
    }
  }

  private cutEnd(): SessionEnd {
    switch (this.cutReason) {
      case 'closed':
        return { kind: 'closed' };
      case 'restart':
        return { kind: 'restart' };
      case 'idle':
        return { kind: 'failed', reason: 'timeout', message: `the stream was silent for ${this.init.idleTimeoutMs} ms` };
      default:
        return { kind: 'failed', reason: 'timeout', message: `no stream within ${this.init.requestTimeoutMs} ms` };
    }
  }

  /** Long-polls `peer` until the stream may be tried again; 'closed' when the watch was closed meanwhile. */
  private async longPoll(peer: string, retryAfterMs: number | undefined): Promise<'closed' | 'over'> {
    const { clock, http, selector } = this.components;
    const forMs = Math.max(retryAfterMs ?? 0, this.init.streamRetryMs ?? DEFAULT_STREAM_RETRY_MS);
    this.log.info({ peer, forMs }, 'the peer serves as many watch streams as it may; long-polling it instead');
    this.interrupt = new AbortController();
    this.cutReason = null;
    this.target.connected(peer);
    let end;
    try {
      end = await longPollUntil({
        http,
        clock,
        namespace: this.init.namespace,
        requestTimeoutMs: this.init.requestTimeoutMs,
        peer,
        services: this.services,
        untilMs: clock.nowMs() + forMs,
        signal: this.interrupt.signal,
        heard: () => this.target.heard(),
        snapshot: (message) => this.target.applySnapshot(peer, message),
      });
    } finally {
      this.target.disconnected();
    }
    if (end.kind === 'failed') selector.failed(peer, end.reason, end.retryAfterMs);
    return this.closed ? 'closed' : 'over';
  }

  /** A non-200 answer to the watch: another peer on 5xx/429, a pause on other 4xx, long polls when the peer is full. */
  private async refused(response: HttpResponse): Promise<SessionEnd> {
    const text = (await response.text().catch(() => '')).slice(0, 200);
    const retryAfterMs = parseRetryAfterMs(response.headers['retry-after'], this.components.clock.nowMs());
    if (response.status === 429 && text.includes('"REG_ERR_TOO_MANY_WATCHERS"')) return { kind: 'busy', retryAfterMs };
    const verdict = classifyStatus(response.status);
    if (verdict.kind === 'failover') {
      return {
        kind: 'failed',
        reason: verdict.reason,
        message: `answered ${response.status}: ${text}`,
        retryAfterMs,
      };
    }
    return { kind: 'rejected', status: response.status, message: text };
  }
}
