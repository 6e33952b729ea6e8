/**
 * The only source of time in the core. Production uses `systemClock`; tests use a fake clock
 * (test/support/fake-clock.ts) whose time only moves when the test advances it, so lease,
 * reaper, replication and membership logic run deterministically without sleeping.
 */
export interface TimerHandle {
  /** Cancels the timer; a no-op when it already fired or was cancelled. */
  cancel(): void;
}

export interface Clock {
  /** Wall-clock time, epoch milliseconds. */
  nowMs(): number;
  /** Runs `fn` once after `delayMs`. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  /** Runs `fn` every `periodMs` until cancelled. */
  setInterval(fn: () => void, periodMs: number): TimerHandle;
}

/** Resolves after `delayMs` of this clock's time (virtual time under a fake clock). */
export function sleep(clock: Clock, delayMs: number): Promise<void> {
  return new Promise((resolve) => {
    clock.setTimeout(resolve, delayMs);
  });
}

/** Real time through the Node.js timers. Timers are unref'd so they never hold the process open. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  setTimeout(fn, delayMs) {
    const timer = setTimeout(fn, delayMs);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
  setInterval(fn, periodMs) {
    const timer = setInterval(fn, periodMs);
    timer.unref();
    return { cancel: () => clearInterval(timer) };
  },
};
