import type { Clock } from '../clock/clock.js';

/**
 * Replay protection for signed peer calls: a call is fresh when its timestamp lies within
 * `windowMs` of this peer's clock (either way: peers' clocks differ a little) and its nonce
 * has not been seen. A nonce is remembered for twice the window from when it was seen,
 * which covers every moment at which its timestamp would still pass (a timestamp up to one
 * window ahead, accepted until one window after it). The cache is bounded: when full of
 * nonces still in their window, new calls are refused (the peer backs off and retries)
 * rather than forgetting a nonce and letting a replay through.
 */

export type Freshness = 'fresh' | 'too-old' | 'too-new';

/** Is a timestamp within the window around now? Pure. */
export function checkTimestamp(timestampMs: number, nowMs: number, windowMs: number): Freshness {
  if (timestampMs < nowMs - windowMs) return 'too-old';
  if (timestampMs > nowMs + windowMs) return 'too-new';
  return 'fresh';
}

export type NonceOutcome = 'remembered' | 'replayed' | 'full';

export class ReplayGuard {
  /** Nonce -> when it may be forgotten; insertion order is expiry order (the clock permitting). */
  private readonly nonces = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly init: { windowMs: number; maxNonces: number },
  ) {}

  get size(): number {
    return this.nonces.size;
  }

  /** Checks the timestamp against the window. */
  freshness(timestampMs: number): Freshness {
    return checkTimestamp(timestampMs, this.clock.nowMs(), this.init.windowMs);
  }

  /** True when the nonce was seen within its window (a cheap early check; `remember` decides). */
  seen(nonce: string): boolean {
    const expiresAtMs = this.nonces.get(nonce);
    return expiresAtMs !== undefined && expiresAtMs > this.clock.nowMs();
  }

  /**
   * Records a nonce of a verified call, atomically with the check: `replayed` when it was
   * already seen, `full` when the cache holds `maxNonces` nonces still in their window.
   */
  remember(nonce: string): NonceOutcome {
    const nowMs = this.clock.nowMs();
    this.prune(nowMs);
    const expiresAtMs = this.nonces.get(nonce);
    if (expiresAtMs !== undefined && expiresAtMs > nowMs) return 'replayed';
    if (this.nonces.size >= this.init.maxNonces) return 'full';
    this.nonces.set(nonce, nowMs + 2 * this.init.windowMs);
    return 'remembered';
  }

  private prune(nowMs: number): void {
    for (const [nonce, expiresAtMs] of this.nonces) {
      // Oldest first; stop at the first one still in its window (a clock step back may leave
      // a few expired ones behind it: they go on a later call, and never wrongly).
      if (expiresAtMs > nowMs) break;
      this.nonces.delete(nonce);
    }
  }
}
