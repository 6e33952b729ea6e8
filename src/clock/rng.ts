/**
 * The only source of randomness in the core (jitter, peer choice, eviction order). Seeded
 * in tests so every random choice repeats; seeded from the OS in production.
 */
export interface Rng {
  /** A float in [0, 1). */
  next(): number;
}

/** mulberry32: a small, fast, seedable PRNG; good enough for jitter and shuffles. */
export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  return {
    next() {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

/** An integer in [0, maxExclusive). */
export function randomInt(rng: Rng, maxExclusive: number): number {
  return Math.floor(rng.next() * maxExclusive);
}

/** `baseMs` plus up to `ratio` of itself, so that many timers with the same period spread out. */
export function withJitter(rng: Rng, baseMs: number, ratio: number): number {
  return Math.round(baseMs * (1 + ratio * rng.next()));
}

/** Fisher-Yates shuffle into a new array. */
export function shuffled<T>(rng: Rng, items: readonly T[]): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = randomInt(rng, i + 1);
    const tmp = out[i] as T;
    out[i] = out[j] as T;
    out[j] = tmp;
  }
  return out;
}
