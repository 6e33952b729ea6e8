/**
 * Go's duration syntax (`10s`, `1m30s`, `1.5h`, `250ms`), which Consul uses for `wait`, a
 * check's `TTL` and `DeregisterCriticalServiceAfter`. Written by hand: it is one regular
 * expression, and the project's own `parseDuration` (validate.ts) reads only one unit.
 */

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;

/**
 * Milliseconds of a Go duration, or undefined when the text is not one. A bare number is read
 * as seconds (Consul's `wait=60` works so). Negative durations are refused.
 */
export function goDurationMs(text: string): number | undefined {
  if (text.length === 0 || text.length > 64) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  if (text === '0') return 0;
  let totalMs = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const start = PART.lastIndex;
    const match = PART.exec(text);
    if (!match || match.index !== start) return undefined;
    totalMs += Number(match[1]) * UNIT_MS[match[2]!]!;
  }
  return Number.isFinite(totalMs) ? totalMs : undefined;
}
