import type { Clock, TimerHandle } from '../clock/clock.js';
import { randomInt, type Rng } from '../clock/rng.js';
import type { ServiceChange, ServiceViews } from '../views/service-views.js';
import { serviceKeyString } from '../registry/types.js';
import type { LimitSubject, LimitsPort } from '../adapters/limits.js';
import type { HeldShares } from '../security/held-shares.js';
import type { HeldPoolRecorder, PushRecorder } from '../metrics/adapter-metrics.js';
import { ConsulError } from './errors.js';
import { ConsulIndexes } from './indexes.js';

/**
 * Consul's blocking queries (`?index=N&wait=5m`) on the read layer. A query on one service
 * waits for that service's index (indexes.ts) to pass N: a change to one service wakes only
 * the queries on it (the problem of consul#3890, where every watcher of every service woke on
 * any change). A query on the whole catalog (`/v1/catalog/services`) waits on its namespace.
 *
 * A change gives its index at once (so that a read made after it answers the new index), and
 * the queries it wakes are woken in slices of `WAKE_SLICE`, one slice per turn of the event
 * loop: each woken query answers from the service's shared encoding (encodings.ts), and a
 * heartbeat or a register arriving meanwhile waits for one slice, not for every watcher.
 *
 * Held queries are the peer's pool `consul blocking queries` of the adapter contract's limits
 * port (src/adapters/limits.ts): a cap for the peer (`consul.blockingQueriesMax`) and a share
 * per principal (`limits.heldSharePerPrincipalRatio`: a token, or the source address without
 * one), so that one client holding all it may leaves room for the others.
 */
export interface BlockingQueriesInit {
  /** `consul.blockingQueriesMax`. */
  maxWaiters: number;
}

/** The pool's name in the limits port. */
export const BLOCKING_POOL = 'consul blocking queries';

/** Queries woken per turn of the event loop. */
export const WAKE_SLICE = 100;

/**
 * The step of a wait's jitter, in ms: the random extra is a whole number of steps. Node keeps
 * one timer list per distinct duration, so a jitter to the ms gave nearly every held query a
 * list of its own (a priority-queue insert and a list object per query, re-made at each
 * re-arm: bench/consul.ts, CPU profile); in steps, 1,000 queries of `wait=5m` share at most
 * 188 lists. A wait shorter than 16 steps gets no jitter.
 */
export const JITTER_STEP_MS = 100;

/** The random extra of a wait: up to 1/16 of it (Consul's), in whole `JITTER_STEP_MS` steps. */
export function waitJitterMs(rng: Rng, waitMs: number): number {
  return JITTER_STEP_MS * randomInt(rng, Math.floor(waitMs / 16 / JITTER_STEP_MS) + 1);
}

/** Where blocking queries are counted (the adapter's metrics): refusals at a cap, and wakes by a change. */
export interface BlockingMetrics {
  pool(shares: HeldShares): HeldPoolRecorder;
  pushes: PushRecorder;
}

interface Waiter {
  afterIndex: number;
  /** When the change that woke it came (the peer's clock), for the push delay; 0 until then. */
  changedAtMs: number;
  wake: () => void;
}

/** The key of the waiters on a whole namespace (no service name holds a slash). */
function catalogKey(namespace: string): string {
  return `${namespace}/`;
}

/** The key of the waiters on one service: by its identity, so `Web` and `web` wake together. */
function serviceKey(namespace: string, service: string): string {
  return serviceKeyString(namespace, service);
}

export class BlockingQueries {
  /** The X-Consul-Index of every answer (indexes.ts). */
  readonly indexes: ConsulIndexes;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly shares: HeldShares;
  private readonly limits: Pick<LimitsPort, 'pool' | 'hold'>;
  private readonly unsubscribe: () => void;
  /** Woken queries not answered yet, in the order their changes came. */
  private wakeQueue: Waiter[] = [];
  /** The next waiter of `wakeQueue` to wake. */
  private wakeHead = 0;
  private wakeScheduled = false;
  private closed = false;
  private readonly pool: HeldPoolRecorder | undefined;
  private readonly pushes: PushRecorder | undefined;

  constructor(
    private readonly components: { views: ServiceViews; clock: Clock; rng: Rng; limits: Pick<LimitsPort, 'pool' | 'hold'>; metrics?: BlockingMetrics },
    init: BlockingQueriesInit,
  ) {
    this.indexes = new ConsulIndexes(components.clock);
    this.limits = components.limits;
    this.shares = components.limits.pool(BLOCKING_POOL, init.maxWaiters, 'consul.blockingQueriesMax');
    this.pool = components.metrics?.pool(this.shares);
    this.pushes = components.metrics?.pushes;
    this.unsubscribe = components.views.onChange((change) => this.onChange(change));
  }

  /** Blocking queries held now. */
  get size(): number {
    return this.shares.held;
  }

  /** Blocking queries `owner` (`shareOwnerOf`: `token:NAME`, or `address:IP`) holds now. */
  heldBy(owner: string): number {
    return this.shares.heldBy(owner);
  }

  /**
   * Resolves once the index of `service` (or of the namespace when `service` is null) passes
   * `afterIndex`, or after `waitMs` plus up to 1/16 more (Consul's jitter, so that watchers do
   * not all come back at once; in steps: `waitJitterMs`), or when `gone` is called (the client went away). Throws a 429
   * when the peer's cap or `owner`'s share of it is held already. `gone` is a plain callback
   * slot rather than an AbortSignal: aborting a signal builds a DOMException with a stack,
   * which cost more than the rest of a woken query (bench/consul.ts, CPU profile).
   */
  wait(namespace: string, service: string | null, afterIndex: number, waitMs: number, subject: LimitSubject, gone: { onGone?: () => void; isGone: boolean }): Promise<void> {
    if (this.closed || gone.isGone) return Promise.resolve();
    const slot = this.limits.hold(this.shares, subject);
    if (!slot.held) {
      this.pool?.refused(slot.cap);
      throw new ConsulError(429, slot.message, 5);
    }
    const key = service === null ? catalogKey(namespace) : serviceKey(namespace, service);
    return new Promise((resolve) => {
      let timer: TimerHandle | undefined;
      const waiter: Waiter = {
        afterIndex,
        changedAtMs: 0,
        wake: () => {
          timer?.cancel();
          gone.onGone = undefined;
          const set = this.waiters.get(key);
          if (set?.delete(waiter) && set.size === 0) this.waiters.delete(key);
          slot.release();
          resolve();
        },
      };
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(waiter);
      timer = this.components.clock.setTimeout(waiter.wake, waitMs + waitJitterMs(this.components.rng, waitMs));
      gone.onGone = waiter.wake;
    });
  }

  /** Wakes every query and stops following the views (shutdown). */
  close(): void {
    this.closed = true;
    this.unsubscribe();
    const queued = this.wakeQueue.slice(this.wakeHead);
    this.wakeQueue = [];
    this.wakeHead = 0;
    for (const waiter of queued) waiter.wake();
    for (const set of [...this.waiters.values()]) for (const waiter of [...set]) waiter.wake();
  }

  private onChange(change: ServiceChange): void {
    const index = this.indexes.advance(change.namespace, change.service);
    const changedAtMs = this.components.clock.nowMs();
    this.queueAfter(serviceKey(change.namespace, change.service), index, changedAtMs);
    this.queueAfter(catalogKey(change.namespace), index, changedAtMs);
  }

  /** Moves the waiters of `key` that `index` passes to the wake queue (out of their set at once). */
  private queueAfter(key: string, index: number, changedAtMs: number): void {
    const set = this.waiters.get(key);
    if (!set) return;
    for (const waiter of set) {
      if (index > waiter.afterIndex) {
        set.delete(waiter);
        waiter.changedAtMs = changedAtMs;
        this.wakeQueue.push(waiter);
      }
    }
    if (set.size === 0) this.waiters.delete(key);
    if (this.wakeQueue.length > 0 && !this.wakeScheduled) {
      this.wakeScheduled = true;
      // Synchronously for the first slice: a lone watcher is answered in the turn of the change.
      this.wakeSlice();
    }
  }

  private wakeSlice(): void {
    // Read from a head index, not spliced off the front: a splice per slice moves the rest of
    // the queue each time (quadratic in the waiters woken by one change).
    const end = Math.min(this.wakeHead + WAKE_SLICE, this.wakeQueue.length);
    for (; this.wakeHead < end; this.wakeHead++) {
      const waiter = this.wakeQueue[this.wakeHead]!;
      // A wake by a change is a push: counted with the time from the change to it (a slice waits its turn).
      this.pushes?.pushed(waiter.changedAtMs);
      waiter.wake();
    }
    if (this.wakeHead >= this.wakeQueue.length) {
      this.wakeQueue = [];
      this.wakeHead = 0;
      this.wakeScheduled = false;
      return;
    }
    setImmediate(() => this.wakeSlice());
  }
}
