/**
 * Event-loop time for long reads (a whole-registry answer, a cold build of many services).
 * Such a read works in slices and yields between them, so a heartbeat arriving meanwhile
 * waits for one slice, not for the whole answer.
 */

/** How long the reads gathering together may hold the event loop in one turn before they yield. */
export const YIELD_AFTER_MS = 5;

/** Lets every I/O callback that is due run before the caller continues. */
export const yieldToLoop = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * One budget of loop time for every read being gathered. Reads that yield continue in the
 * same turn of the loop, one after the other: with a budget each, eight Prometheus scrapers
 * arriving together built eight services in one turn (over 100 ms at 1,000 instances each,
 * seen with bench/loop-probe.cjs). With one budget, once the reads have held the loop for
 * `YIELD_AFTER_MS` in a turn, every one of them waits for the next turn.
 */
export class LoopBudget {
  private heldSinceMs: number | null = null;

  /** Whether the caller should yield now; the first call of a turn starts that turn's budget. */
  spent(): boolean {
    const nowMs = performance.now();
    if (this.heldSinceMs === null) {
      this.heldSinceMs = nowMs;
      // Runs in the next turn, before the reads that yield after this call.
      setImmediate(() => (this.heldSinceMs = null));
      return false;
    }
    return nowMs - this.heldSinceMs >= YIELD_AFTER_MS;
  }
}

/** The peer's one budget, shared by Prometheus SD answers and Consul's whole-catalog reads. */
export const readsBudget = new LoopBudget();

/** Where a build in slices keeps its result, and the build under way while there is one. */
export interface SharedBuild<T> {
  built?: T;
  building?: Promise<T>;
}

/**
 * What `holder` has built, while `holds` says it is still good; otherwise one build, which every
 * caller arriving while it runs waits for (a build that yields would otherwise be started again
 * by each of them).
 */
export function sharedBuild<T>(holder: SharedBuild<T>, build: () => Promise<T>, holds: (built: T) => boolean = () => true): Promise<T> {
  if (holder.built !== undefined && holds(holder.built)) return Promise.resolve(holder.built);
  holder.building ??= build()
    .then((done) => (holder.built = done))
    .finally(() => (holder.building = undefined));
  return holder.building;
}
