import type { Clock, TimerHandle } from '../../src/clock/clock.js';
import type { FakeClock } from './fake-clock.js';

/**
 * A clock whose time is a fake clock's and whose timers the test fires one by one (and whose
 * interval, the reaper's tick, fires when the test says), so that a change can land between two
 * given slices of a sliced reaper run.
 */
export class SteppedClock implements Clock {
  private readonly queue: { fn: () => void; cancelled: boolean }[] = [];
  private tick: (() => void) | undefined;

  constructor(private readonly fake: FakeClock) {}

  nowMs(): number {
    return this.fake.nowMs();
  }
  setTimeout(fn: () => void): TimerHandle {
    const timer = { fn, cancelled: false };
    this.queue.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }
  setInterval(fn: () => void): TimerHandle {
    this.tick = fn;
    return { cancel: () => (this.tick = undefined) };
  }
  /** Fires the reaper's interval, as its timer would. */
  fireTick(): void {
    this.tick?.();
  }
  /** Slices waiting to run (not cancelled). */
  get pending(): number {
    return this.queue.filter((timer) => !timer.cancelled).length;
  }
  /** Runs the next waiting slice; false when none is waiting. */
  runSlice(): boolean {
    for (;;) {
      const timer = this.queue.shift();
      if (!timer) return false;
      if (timer.cancelled) continue;
      timer.fn();
      return true;
    }
  }
  runAll(): number {
    let slices = 0;
    while (this.runSlice()) slices += 1;
    return slices;
  }
}
