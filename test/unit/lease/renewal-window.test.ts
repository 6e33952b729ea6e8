import { describe, expect, it } from 'vitest';
import { RenewalWindow } from '../../../src/lease/renewal-window.js';

describe('RenewalWindow', () => {
  it('counts renewals of the last window only', () => {
    const window = new RenewalWindow(60_000, 1_000);
    for (let t = 0; t < 120_000; t += 1_000) window.recordRenewal(t);
    expect(window.count(119_999)).toBe(60);
    // Whole one-second buckets: 91 s .. 150 s.
    expect(window.count(150_000)).toBe(29);
    expect(window.count(200_000)).toBe(0);
  });

  it('counts bursts within one bucket', () => {
    const window = new RenewalWindow(60_000, 1_000);
    for (let i = 0; i < 1_000; i++) window.recordRenewal(5_500);
    expect(window.count(6_000)).toBe(1_000);
    expect(window.count(64_999)).toBe(1_000);
    expect(window.count(65_000)).toBe(0);
  });
});

describe('RenewalWindow with its default 100 ms buckets', () => {
  it('sees a client renewing every 10 s six times a minute, give or take the one on the edge, whatever its phase', () => {
    for (const phaseMs of [0, 1, 99, 100, 4_321, 9_999]) {
      const window = new RenewalWindow(60_000);
      let nextBeatMs = phaseMs;
      const counts = new Set<number>();
      for (let now = 0; now < 190_000; now += 37) {
        while (nextBeatMs <= now) {
          window.recordRenewal(nextBeatMs);
          nextBeatMs += 10_000;
        }
        if (now >= 70_000) counts.add(window.count(now));
      }
      expect([...counts].sort()).toEqual(phaseMs % 100 === 0 ? [6] : [5, 6].filter((n) => counts.has(n)));
      expect(Math.min(...counts)).toBeGreaterThanOrEqual(5);
    }
  });
});
