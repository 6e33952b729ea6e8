import type { Clock, TimerHandle } from './clock.js';

/**
 * How long the event loop must have stood still (SIGSTOP, a paused VM, swapping) for it to count
 * as a stall: twice the lan profile's probe timeout (500 ms), the shortest deadline a peer gives
 * a call, so the calls that waited meanwhile are likely abandoned.
 */
export const STALL_MS = 1_000;
/** How often the watch looks at the loop's pace. */
export const WATCH_INTERVAL_MS = 100;
/** How long after a stall peer calls are held to see whether their caller is still there. */
export const HOLD_AFTER_STALL_MS = 5_000;
/** How long the holding lasts past the last call found abandoned by its caller (the queue still drains). */
export const HOLD_AFTER_DROP_MS = 1_000;
/** The longest calls are held after one stall, however many are found abandoned. */
export const HOLD_MAX_MS = 10_000;
/** The longest the peer's own timers wait after a stall for the connections queued meanwhile to be accepted. */
export const DRAIN_MAX_MS = 1_000;

/** What a stall watch is told; the time and the turns are the real ones unless a test gives its own. */
export interface StallWatchOptions {
  /** Called at each stall, with how long the loop stood still (a log line). */
  onStall?(stalledMs: number): void;
  /** Monotonic ms (`performance.now`). */
  now?(): number;
  /** Runs `fn` at the next turn of the loop, after its I/O (`setImmediate`). */
  nextTurn?(fn: () => void): void;
  /** Runs `fn` every `periodMs` until the returned function is called (an unref'd `setInterval`). */
  every?(fn: () => void, periodMs: number): () => void;
}

function realInterval(fn: () => void, periodMs: number): () => void {
  const timer = setInterval(fn, periodMs).unref();
  return () => clearInterval(timer);
}

/**
 * Tells when the event loop stood still, from a look that comes late, and what the peer does
 * about the connections its kernel accepted meanwhile.
 *
 * Why: while a peer is stopped its kernel goes on accepting connections. Each other peer
 * rechecks a member that is not up every 250 ms (lan profile), abandons each ping at its 500 ms
 * timeout and opens a new connection for the next, so a peer stopped 20 s finds some 330
 * connections queued when it goes on (bench/findings.md, 2026-12-07; `bench/paused-peer.ts`),
 * and two things make them slow to get through:
 * - Node (libuv since 1.45, libuv/libuv#3696) accepts one connection per turn of the event loop,
 *   and at 1,000,000 instances a peer that goes on starts its own overdue work at once (the
 *   reaper's scan, an anti-entropy round's store pass: slices of 5-30 ms in every turn), so the
 *   queue drained at some 30 connections a second and the others saw it back after 1-4 s. So
 *   after a stall the peer's own periodic work (reaper, anti-entropy, membership: what runs on
 *   the `gatedClock` given to them, never the work of a request) waits until a turn passes with
 *   no connection accepted (the queue is empty), at most `DRAIN_MAX_MS`: the turns are then
 *   short and the queue drains in about a hundred ms (`npx tsx bench/accept-per-turn.ts`: a
 *   server busy in 10 ms slices accepted the last of 300 connections 1,903 ms after the first,
 *   116 ms with its slices held).
 * - Each of those calls is answered in order, all to callers long gone. Each such caller closed
 *   its connection after sending its request, but the request and the close arrive together and
 *   the request is read first (the close at the next turn), so only a call held a turn can be
 *   told abandoned; a call on a connection opened before the stall carries its whole body before
 *   the close, and only the deadline it carries tells. Holding every call would cost every call
 *   a turn: peer calls are held only for a few seconds after a stall (http/abandoned-calls.ts).
 */
export class StallWatch {
  private lastLookMs: number;
  private holdUntilMs = Number.NEGATIVE_INFINITY;
  /** The latest `holdUntilMs` may reach after the last stall (`HOLD_MAX_MS`). */
  private holdCapMs = Number.NEGATIVE_INFINITY;
  private timer: (() => void) | undefined;
  /** While the queue of connections drains after a stall: when it began, and the timers that wait for its end. */
  private drain: { sinceMs: number; waiting: (() => void)[] } | undefined;
  /** Connections accepted so far (`noteConnection`): a turn that adds none finds the queue empty. */
  private connections = 0;
  /** Stalls seen (the loop stood still `STALL_MS` or more). */
  stalls = 0;
  /** Peer calls found abandoned after a stall and skipped. */
  droppedTotal = 0;

  private readonly now: () => number;
  private readonly nextTurn: (fn: () => void) => void;
  private readonly every: (fn: () => void, periodMs: number) => () => void;

  constructor(private readonly options: StallWatchOptions = {}) {
    this.now = options.now ?? (() => performance.now());
    this.nextTurn = options.nextTurn ?? ((fn) => setImmediate(fn));
    this.every = options.every ?? realInterval;
    this.lastLookMs = this.now();
  }

  start(): void {
    this.lastLookMs = this.now();
    this.timer ??= this.every(() => this.look(), WATCH_INTERVAL_MS);
  }

  /** Stops watching; the timers held by a drain under way are dropped (the peer is stopping: its parts cancel their timers). */
  stop(): void {
    this.timer?.();
    this.timer = undefined;
    this.drain = undefined;
  }

  /**
   * One look at the loop's pace: a look later than `STALL_MS` after the one before means the
   * loop stood still that long. Made by the timer, and by anything that asks the watch (the
   * calls queued during a stall can be read before the timer's late turn comes).
   */
  look(): void {
    if (this.timer === undefined) return;
    const nowMs = this.now();
    const stalledMs = nowMs - this.lastLookMs;
    this.lastLookMs = nowMs;
    if (stalledMs < STALL_MS) return;
    this.holdUntilMs = nowMs + HOLD_AFTER_STALL_MS;
    this.holdCapMs = nowMs + HOLD_MAX_MS;
    this.stalls++;
    if (this.drain === undefined) {
      this.drain = { sinceMs: nowMs, waiting: [] };
      // The first count is taken in a later turn, so that an I/O phase (one accept, when any
      // waits) always comes between two counts, wherever in its turn the stall was seen.
      this.nextTurn(() => this.watchDrain(this.connections));
    }
    this.options.onStall?.(stalledMs);
  }

  /** Whether peer calls are held now (the loop stood still lately); never before `start`. */
  holding(): boolean {
    const nowMs = this.now();
    if (nowMs - this.lastLookMs >= STALL_MS) this.look();
    return nowMs < this.holdUntilMs;
  }

  /**
   * A held call was skipped. One whose caller closed its connection (`callerClosed`) means the
   * queue is still draining: calls are held a while longer, up to `HOLD_MAX_MS` after the stall.
   * One skipped for its deadline extends nothing (its deadline is on another clock, and any
   * client can send one).
   */
  noteDropped(callerClosed: boolean): void {
    this.droppedTotal++;
    if (callerClosed) this.holdUntilMs = Math.min(this.holdCapMs, Math.max(this.holdUntilMs, this.now() + HOLD_AFTER_DROP_MS));
  }

  /** The peer's server accepted a connection. */
  noteConnection(): void {
    this.connections++;
  }

  /** Runs `fn` now, or once the connections queued during a stall are accepted (see the class). */
  afterDrain(fn: () => void): void {
    this.lookIfLate();
    if (this.drain === undefined) fn();
    else this.drain.waiting.push(fn);
  }

  /** Whether the peer's own timers wait for the queue to drain now. */
  draining(): boolean {
    return this.drain !== undefined;
  }

  private lookIfLate(): void {
    if (this.now() - this.lastLookMs >= STALL_MS) this.look();
  }

  /** Each turn: a turn with no connection accepted, or `DRAIN_MAX_MS`, ends the drain. */
  private watchDrain(seen: number): void {
    this.nextTurn(() => {
      const drain = this.drain;
      if (drain === undefined) return;
      if (this.connections !== seen && this.now() - drain.sinceMs < DRAIN_MAX_MS) return this.watchDrain(this.connections);
      this.openDrain();
    });
  }

  /** Runs what waited, each on its own: one that throws does so as its timer would have, and the rest still run. */
  private openDrain(): void {
    const waiting = this.drain?.waiting ?? [];
    this.drain = undefined;
    for (const fn of waiting) {
      try {
        fn();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}

/**
 * `clock` with its timers held while `watch` drains the connections queued during a stall: a
 * timer that comes due meanwhile runs once the drain is over (an interval's ticks held
 * meanwhile run once). The time it tells is the clock's own.
 */
export function gatedClock(clock: Clock, watch: StallWatch): Clock {
  return {
    nowMs: () => clock.nowMs(),
    setTimeout(fn, delayMs) {
      let cancelled = false;
      const timer = clock.setTimeout(() => watch.afterDrain(() => cancelled || fn()), delayMs);
      return cancel(timer, () => (cancelled = true));
    },
    setInterval(fn, periodMs) {
      let cancelled = false;
      let held = false;
      const timer = clock.setInterval(() => {
        if (held) return;
        held = true;
        watch.afterDrain(() => {
          held = false;
          if (!cancelled) fn();
        });
      }, periodMs);
      return cancel(timer, () => (cancelled = true));
    },
  };
}

function cancel(timer: TimerHandle, also: () => void): TimerHandle {
  return {
    cancel: () => {
      also();
      timer.cancel();
    },
  };
}
