import { StallWatch, WATCH_INTERVAL_MS } from '../../src/clock/stall-watch.js';

/**
 * A stall watch whose time and turns the test moves: `time.ms` is its monotonic clock, `pass`
 * moves it with the watch's own looks every `WATCH_INTERVAL_MS` (a loop that runs), a plain
 * `time.ms +=` is a loop that stood still, and `turn` runs the turn the watch waits for.
 */
export interface SteppedWatch {
  watch: StallWatch;
  time: { ms: number };
  stalls: number[];
  pass(ms: number): void;
  turn(): void;
}

export function steppedWatch(started = true): SteppedWatch {
  const time = { ms: 0 };
  const stalls: number[] = [];
  let turns: (() => void)[] = [];
  const watch = new StallWatch({
    onStall: (ms) => stalls.push(ms),
    now: () => time.ms,
    nextTurn: (fn) => turns.push(fn),
    every: () => () => {},
  });
  if (started) watch.start();
  return {
    watch,
    time,
    stalls,
    pass(ms) {
      const untilMs = time.ms + ms;
      while (time.ms < untilMs) {
        time.ms = Math.min(untilMs, time.ms + WATCH_INTERVAL_MS);
        watch.look();
      }
    },
    turn() {
      const due = turns;
      turns = [];
      for (const fn of due) fn();
    },
  };
}
