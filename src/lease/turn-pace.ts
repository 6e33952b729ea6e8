/**
 * Counts the items a step-by-step pass has gone through toward one turn's bound: a generator
 * that goes through a long list calls `spent()` after each item and yields when it is true, so
 * that its caller (the reaper's `drive`) can give the event loop back before the next turn. A
 * bound of `Infinity` never yields (a whole run in one call). Counted in items, not time, so
 * that a run takes the same turns under the fake clock.
 */
export class TurnPace {
  private left: number;
  /** True once a turn's bound was reached: what was decided before may have changed since. */
  yielded = false;

  constructor(private readonly perTurn: number) {
    this.left = perTurn;
  }

  /** Whether items were counted since the last turn's bound was reached. */
  get counted(): boolean {
    return this.left < this.perTurn;
  }

  /** Counts one item; true when the turn's bound is reached (and counting starts over for the next). */
  spent(): boolean {
    if (--this.left > 0) return false;
    this.left = this.perTurn;
    this.yielded = true;
    return true;
  }
}
