import type { Clock } from '../clock/clock.js';

/**
 * A budget of lines per second for one kind of frequent log line (an instance registered,
 * cancelled, updated). Within it every event gets its own line; beyond it, the rest of the
 * second's events are counted and told in one summary line. A fleet restarting at once, or a
 * load test, then costs a line per second rather than one per registration: a log line with
 * its write costs about as much as the registration itself (bench/cpu-per-request.ts, with and
 * without the line). The summary is written by the first event of a later second, or by
 * `flush()` (the reaper calls it on every run), whichever comes first.
 */
export class LineBudget {
  private windowStartMs = Number.NEGATIVE_INFINITY;
  private used = 0;
  private suppressed = 0;

  constructor(
    private readonly clock: Clock,
    readonly linesPerSecond: number,
    /** Writes the summary: `count` events since `sinceMs` got no line of their own. */
    private readonly summary: (count: number, sinceMs: number) => void,
  ) {}

  /** True when this event may have its own line; otherwise it is counted for the summary. */
  allow(): boolean {
    const nowMs = this.clock.nowMs();
    // A new second, or the wall clock stepped back (then start over rather than wait for it).
    if (nowMs - this.windowStartMs >= 1_000 || nowMs < this.windowStartMs) {
      this.flush();
      this.windowStartMs = nowMs;
      this.used = 0;
    }
    if (this.used < this.linesPerSecond) {
      this.used += 1;
      return true;
    }
    this.suppressed += 1;
    return false;
  }

  /** Writes the summary of the events counted so far, if any. */
  flush(): void {
    if (this.suppressed === 0) return;
    const count = this.suppressed;
    this.suppressed = 0;
    this.summary(count, this.windowStartMs);
  }
}
