import { describe, expect, it } from 'vitest';
import { cappedBackoffMs } from '../../../src/clock/backoff.js';
import { seededRng } from '../../../src/clock/rng.js';

describe('cappedBackoffMs', () => {
  it.each([
    [0, 0, 0],
    [1, 50, 100],
    [2, 100, 200],
    [3, 200, 400],
    [7, 3_200, 6_400],
    [8, 5_000, 10_000],
    [50, 5_000, 10_000],
  ])('after %i failures waits between %i and %i ms', (failures, low, high) => {
    const rng = seededRng(failures + 1);
    for (let i = 0; i < 50; i++) {
      const delay = cappedBackoffMs(failures, 100, 10_000, rng.next());
      expect(delay).toBeGreaterThanOrEqual(low);
      expect(delay).toBeLessThanOrEqual(high);
    }
  });
});
