import type { FakeClock } from './fake-clock.js';

/**
 * Resolves (or rejects) as `work` does, moving virtual time in 1 ms steps until it settles
 * (for client calls whose timers run on the fake clock); fails after `maxMs` of virtual time.
 */
export async function settled<T>(clock: FakeClock, work: Promise<T>, maxMs = 60_000): Promise<T> {
  let done = false;
  const tracked = work.finally(() => {
    done = true;
  });
  // Handled below, once time has moved: do not report it as unhandled meanwhile.
  tracked.catch(() => undefined);
  await clock.advanceUntil(() => done, maxMs, 1);
  return tracked;
}
