/**
 * Capped exponential backoff with "equal jitter": after the n-th consecutive failure (n >= 1)
 * wait between half and all of `min(maxMs, baseMs * 2^(n-1))`, so that callers that failed
 * together do not retry together. `random` is in [0, 1) (from an injected Rng). Shared by
 * peer replication and the client SDK.
 */
export function cappedBackoffMs(failures: number, baseMs: number, maxMs: number, random: number): number {
  if (failures <= 0) return 0;
  const ceilingMs = Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(ceilingMs / 2 + (ceilingMs / 2) * random);
}
