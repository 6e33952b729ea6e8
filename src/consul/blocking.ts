import type { Clock, TimerHandle } from '../clock/clock.js';
import { randomInt, type Rng } from '../clock/rng.js';
import type { ServiceChange, ServiceViews } from '../views/service-views.js';
import { serviceKeyString } from '../registry/types.js';
import { ConsulError } from './errors.js';

/**
 * Consul's blocking queries (`?index=N&wait=5m`) on the read layer. A query on one service
 * waits for that service's revision to pass N: a change to one service wakes only the queries
 * on it (the problem of consul#3890, where every watcher of every service woke on any change).
 * A query on the whole catalog (`/v1/catalog/services`) waits on its namespace. Waiters are
 * woken synchronously from `ServiceViews.onChange`; each answers from the view once, so a
 * burst of changes in one tick costs one view build and one encoding, shared by all of them.
 */
export interface BlockingQueriesInit {
  /** `consul.blockingQueriesMax`. */
  maxWaiters: number;
}

interface Waiter {
  afterIndex: number;
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
  private readonly waiters = new Map<string, Set<Waiter>>();
  private count = 0;
  private readonly unsubscribe: () => void;
  private closed = false;

  constructor(
    private readonly components: { views: ServiceViews; clock: Clock; rng: Rng },
    private readonly init: BlockingQueriesInit,
  ) {
    this.unsubscribe = components.views.onChange((change) => this.onChange(change));
  }

  /** Blocking queries held now. */
  get size(): number {
    return this.count;
  }

  /**
   * Resolves once the revision of `service` (or of any service of the namespace when `service`
   * is null) passes `afterIndex`, or after `waitMs` plus up to 1/16 more (Consul's jitter, so
   * that watchers do not all come back at once), or when `signal` aborts. Throws a 429 when
   * `consul.blockingQueriesMax` queries are already held.
   */
  wait(namespace: string, service: string | null, afterIndex: number, waitMs: number, signal: AbortSignal): Promise<void> {
    if (this.closed || signal.aborted) return Promise.resolve();
    if (this.count >= this.init.maxWaiters) {
      throw new ConsulError(429, `this peer already holds ${this.init.maxWaiters} blocking queries (consul.blockingQueriesMax); retry later or ask another peer`, 5);
    }
    const key = service === null ? catalogKey(namespace) : serviceKey(namespace, service);
    return new Promise((resolve) => {
      let timer: TimerHandle | undefined;
      const onAbort = () => waiter.wake();
      const waiter: Waiter = {
        afterIndex,
        wake: () => {
          timer?.cancel();
          signal.removeEventListener('abort', onAbort);
          const set = this.waiters.get(key);
          if (set?.delete(waiter)) {
            this.count -= 1;
            if (set.size === 0) this.waiters.delete(key);
          }
          resolve();
        },
      };
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(waiter);
      this.count += 1;
      const jitterMs = randomInt(this.components.rng, Math.floor(waitMs / 16) + 1);
      timer = this.components.clock.setTimeout(waiter.wake, waitMs + jitterMs);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Wakes every query and stops following the views (shutdown). */
  close(): void {
    this.closed = true;
    this.unsubscribe();
    for (const set of [...this.waiters.values()]) for (const waiter of [...set]) waiter.wake();
  }

  private onChange(change: ServiceChange): void {
    this.wakeAfter(serviceKey(change.namespace, change.service), change.revision);
    this.wakeAfter(catalogKey(change.namespace), change.revision);
  }

  private wakeAfter(key: string, revision: number): void {
    const set = this.waiters.get(key);
    if (!set) return;
    for (const waiter of [...set]) if (revision > waiter.afterIndex) waiter.wake();
  }
}
