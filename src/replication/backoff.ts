import type { Rng } from '../clock/rng.js';

export interface BackoffPolicy {
  /** Delay after the first failure. */
  retryBaseMs: number;
  /** The delay never grows past this. */
  retryMaxMs: number;
}

/**
 * Capped exponential backoff with "equal jitter": after the n-th consecutive failure (n >= 1)
 * wait between half and all of `min(retryMaxMs, retryBaseMs * 2^(n-1))`, so that peers that
 * failed together do not retry together.
 */
export function backoffMs(failures: number, policy: BackoffPolicy, rng: Rng): number {
  if (failures <= 0) return 0;
  const ceilingMs = Math.min(policy.retryMaxMs, policy.retryBaseMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(ceilingMs / 2 + (ceilingMs / 2) * rng.next());
}
