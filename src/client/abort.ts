import type { Clock } from '../clock/clock.js';

/**
 * An AbortController that also aborts when `parent` does. `release()` unhooks it from the
 * parent once the work is done, so long-lived parents (the client's own signal) do not
 * collect listeners.
 */
export function linkedAbort(parent?: AbortSignal): { controller: AbortController; release(): void } {
  const controller = new AbortController();
  if (!parent) return { controller, release: () => {} };
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { controller, release: () => {} };
  }
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return { controller, release: () => parent.removeEventListener('abort', onAbort) };
}

/**
 * Waits `delayMs` of the clock's time; resolves true when the time passed, false as soon as
 * `signal` aborts (the timer is then cancelled).
 */
export function pause(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      timer.cancel();
      resolve(false);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, delayMs);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
