/**
 * The event-loop budget of one build of a Eureka document that spans many loops (the services
 * gathered, sorted, counted, rendered, assembled): every loop spends from the same budget, so
 * the build yields a turn after a bounded amount of work whatever the shape of the registry.
 * A budget per loop let whatever fell below its own bound run on: a full fetch of 200,000
 * applications of 5 instances each never reached a part's slice bound and held the event loop
 * for 19 s in one turn (bench/eureka-turns.ts).
 *
 * Work is counted in units: looking at one service, one app or one status is 1 unit, writing
 * one instance is `RENDER_UNITS` (it costs about 20 times as much). The build yields after
 * `TURN_UNITS` units, or after `TURN_MAX_MS` of the loop, whichever comes first: the count
 * keeps turns short where time is not looked at, and makes the yields countable in tests; the
 * time catches what the count does not foresee (code not yet optimised, a scavenge in the
 * middle, a cold view that builds a large service).
 */

/** Units of work per turn before a build yields: 250 instances written, or 5,000 services looked at. */
export const TURN_UNITS = 5_000;
/** Units charged for writing one instance (JSON or XML): about 20 µs, 20 times a look at a service. */
export const RENDER_UNITS = 20;
/**
 * Longest a build may hold the event loop before it yields, whatever its count: in a cold build
 * 250 instances took 9 to 41 ms, past the 20 ms heartbeat target (timed by hand in a peer under
 * bench/read-scale.ts --only=fullfetch; the stalls show with bench/loop-probe.cjs).
 */
export const TURN_MAX_MS = 4;
/** Units between two looks at the time (25 instances written). */
const TIME_CHECK_UNITS = 500;

export class TurnBudget {
  private units = 0;
  private nextTimeCheck = TIME_CHECK_UNITS;
  private turnStartMs: number;

  constructor(
    private readonly components: {
      /** Lets the event loop run (setImmediate in the peer; counted in tests). */
      yieldTurn: () => Promise<void>;
      /** Milliseconds of a monotonic clock (default `performance.now`). */
      elapsedMs?: () => number;
    },
    private readonly init: { turnUnits: number; turnMaxMs: number } = { turnUnits: TURN_UNITS, turnMaxMs: TURN_MAX_MS },
  ) {
    this.turnStartMs = this.now();
  }

  /**
   * Counts `units` of work done; true when the build should yield before it goes on (the
   * caller then awaits `yield()`). Synchronous, so that a loop pays no promise per step.
   */
  spend(units: number): boolean {
    this.units += units;
    if (this.units >= this.init.turnUnits) return true;
    if (this.units < this.nextTimeCheck) return false;
    this.nextTimeCheck = this.units + TIME_CHECK_UNITS;
    return this.now() - this.turnStartMs >= this.init.turnMaxMs;
  }

  /** Lets the event loop run a turn, then starts the next turn's budget. */
  async yield(): Promise<void> {
    await this.components.yieldTurn();
    this.units = 0;
    this.nextTimeCheck = TIME_CHECK_UNITS;
    this.turnStartMs = this.now();
  }

  private now(): number {
    return this.components.elapsedMs ? this.components.elapsedMs() : performance.now();
  }
}

/** Items sorted in one piece (`Array.prototype.sort`) before the runs are merged in turns. */
const SORT_RUN = 512;

/**
 * `items` sorted by `compare` (stable), in turns of `budget`: runs of `SORT_RUN` sorted in one
 * piece, then merged pass by pass, one unit per item placed. Sorting the 200,000 applications
 * of a registry in one piece took 25 to 35 ms of one turn.
 */
export async function sortInTurns<T>(items: readonly T[], compare: (a: T, b: T) => number, budget: TurnBudget): Promise<T[]> {
  const count = items.length;
  let from = items.slice();
  for (let start = 0; start < count; start += SORT_RUN) {
    const run = from.slice(start, start + SORT_RUN).sort(compare);
    for (let i = 0; i < run.length; i++) from[start + i] = run[i]!;
    if (budget.spend(run.length)) await budget.yield();
  }
  let to = new Array<T>(count);
  for (let width = SORT_RUN; width < count; width *= 2) {
    for (let low = 0; low < count; low += 2 * width) {
      const middle = Math.min(count, low + width);
      const high = Math.min(count, low + 2 * width);
      let left = low;
      let right = middle;
      for (let out = low; out < high; out++) {
        // The left run first on a tie: the sort is stable.
        to[out] = right >= high || (left < middle && compare(from[left]!, from[right]!) <= 0) ? from[left++]! : from[right++]!;
        if (budget.spend(1)) await budget.yield();
      }
    }
    [from, to] = [to, from];
  }
  return from;
}
