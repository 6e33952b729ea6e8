import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * How long the event loop must have stood still (SIGSTOP, a paused VM, swapping) for the calls
 * that waited meanwhile to be taken for abandoned: twice the lan profile's probe timeout (500
 * ms), the shortest deadline a peer gives a call.
 */
export const STALL_MS = 1_000;
/** How often the watch looks at the loop's pace. */
export const WATCH_INTERVAL_MS = 100;
/** How long after a stall peer calls are held to see whether their caller is still there. */
export const HOLD_AFTER_STALL_MS = 5_000;
/** How long the holding lasts past the last call found abandoned (the queue still drains). */
export const HOLD_AFTER_DROP_MS = 1_000;

/** The path every peer call starts with (peer-routes.ts): only these are held. */
export const PEER_CALL_PREFIX = '/v1/peer/';

/**
 * Tells when the event loop stood still, from a timer that fires late.
 *
 * Why: while a peer is stopped its kernel goes on accepting connections. Each other peer
 * rechecks a member that is not up every 250 ms (lan profile), abandons each ping at its 500 ms
 * timeout and opens a new connection for the next, so a peer stopped 20 s finds some 330
 * connections queued when it goes on, and answers them in order, all to callers long gone,
 * before the pings still waited for: the others see it back only after that (bench/findings.md,
 * 2026-12-07; `bench/paused-peer.ts`). Each such connection's caller closed it after sending
 * its request, but the request and the close arrive together and the request is read first
 * (the close at the next turn of the loop), so only a call held a turn can be told abandoned.
 * Holding every call would cost every call a turn; a call is held only for a few seconds after
 * the loop stood still, when the queue holds calls whose callers left.
 */
export class StallWatch {
  private lastLookMs: number;
  private holdUntilMs = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  /** Stalls seen (the loop stood still `STALL_MS` or more). */
  stalls = 0;
  /** Peer calls found abandoned after a stall and skipped. */
  droppedTotal = 0;

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly onStall?: (stalledMs: number) => void,
  ) {
    this.lastLookMs = now();
  }

  start(): void {
    this.lastLookMs = this.now();
    this.timer ??= setInterval(() => this.look(), WATCH_INTERVAL_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One look at the loop's pace: a look later than `STALL_MS` after the one before means the
   * loop stood still that long. Called by the timer, and by `holding` (the calls queued during
   * a stall can be read before the timer's late turn comes).
   */
  look(): void {
    const nowMs = this.now();
    const stalledMs = nowMs - this.lastLookMs;
    this.lastLookMs = nowMs;
    if (stalledMs < STALL_MS) return;
    this.holdUntilMs = nowMs + HOLD_AFTER_STALL_MS;
    this.stalls++;
    this.onStall?.(stalledMs);
  }

  /** Whether calls are held now (the loop stood still lately); never before `start`. */
  holding(): boolean {
    if (this.timer === undefined) return false;
    if (this.now() - this.lastLookMs >= STALL_MS) this.look();
    return this.now() < this.holdUntilMs;
  }

  /** A held call was found abandoned: the queue is still draining, hold a while longer. */
  noteDropped(): void {
    this.droppedTotal++;
    this.holdUntilMs = Math.max(this.holdUntilMs, this.now() + HOLD_AFTER_DROP_MS);
  }
}

/**
 * Whether the caller of `raw` has gone: it closed its side of the connection (no peer
 * half-closes a call it still waits for: undici closes only a call it gave up on), or the
 * connection broke.
 */
export function callerLeft(raw: IncomingMessage): boolean {
  const socket = raw.socket;
  return raw.destroyed || socket.destroyed || socket.readableEnded;
}

/**
 * Holds a request for two turns of the loop (the close that came with it is read in the
 * turn after the request), then drops it unanswered when its caller left, or hands it on.
 */
export function holdThenHandOn(
  raw: IncomingMessage,
  res: ServerResponse,
  watch: StallWatch,
  handOn: (raw: IncomingMessage, res: ServerResponse) => void,
): void {
  setImmediate(() =>
    setImmediate(() => {
      if (!callerLeft(raw)) return handOn(raw, res);
      watch.noteDropped();
      raw.socket.destroy();
    }),
  );
}
