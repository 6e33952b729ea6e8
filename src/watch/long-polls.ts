import type { Clock, TimerHandle } from '../clock/clock.js';
import { randomInt, type Rng } from '../clock/rng.js';

interface Waiter {
  afterRevision: number;
  resolve: (changed: boolean) => void;
}

/**
 * Long polls waiting for a service's revision to pass an index, by service key
 * (ServiceViews.keyOf). The hub admits them and tells them of each change.
 */
export class LongPolls {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private count = 0;

  constructor(private readonly components: { clock: Clock; rng: Rng }) {}

  /** Long polls waiting now. */
  get size(): number {
    return this.count;
  }

  /**
   * Resolves true once `notify` tells of a revision past `afterRevision` for `key`, or false
   * after `waitMs` (plus a random extra of up to 1/16, so that many pollers do not wake
   * together), on abort, or on `closeAll`.
   */
  wait(key: string, afterRevision: number, waitMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      let timer: TimerHandle | undefined;
      const waiter: Waiter = {
        afterRevision,
        resolve: (changed) => {
          timer?.cancel();
          const set = this.waiters.get(key);
          if (set?.delete(waiter)) this.count -= 1;
          if (set?.size === 0) this.waiters.delete(key);
          resolve(changed);
        },
      };
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(waiter);
      this.count += 1;
      const extraMs = randomInt(this.components.rng, Math.floor(waitMs / 16) + 1);
      timer = this.components.clock.setTimeout(() => waiter.resolve(false), waitMs + extraMs);
      signal?.addEventListener('abort', () => waiter.resolve(false), { once: true });
    });
  }

  /** The service `key` is now at `revision`: the polls waiting for less are answered. */
  notify(key: string, revision: number): void {
    const waiting = this.waiters.get(key);
    if (!waiting) return;
    for (const waiter of [...waiting]) if (revision > waiter.afterRevision) waiter.resolve(true);
  }

  /** Answers every poll false (shutdown). */
  closeAll(): void {
    for (const set of [...this.waiters.values()]) for (const waiter of [...set]) waiter.resolve(false);
  }
}
