import { describe, expect, it } from 'vitest';
import { assessSelfPreservation, expectedRenewals, hasRenewed } from '../../../src/lease/self-preservation.js';

const policy = { thresholdRatio: 0.85, minOwnedInstances: 10, warmUpUntilMs: 1_000 };
const now = 100_000;

describe('assessSelfPreservation', () => {
  it.each([
    ['zero instances', { renewals: 0, expected: 0, ownedInstances: 0 }, policy, 'auto', false, 'too few'],
    ['a single instance that died', { renewals: 0, expected: 6, ownedInstances: 1 }, policy, 'auto', false, 'too few'],
    ['just under the minimum', { renewals: 0, expected: 54, ownedInstances: 9 }, policy, 'auto', false, 'too few'],
    ['the rate exactly at the threshold', { renewals: 85, expected: 100, ownedInstances: 20 }, policy, 'auto', false, 'at or above'],
    ['one renewal under the threshold', { renewals: 84, expected: 100, ownedInstances: 20 }, policy, 'auto', true, 'below the 85 expected'],
    ['no renewals at all', { renewals: 0, expected: 600, ownedInstances: 100 }, policy, 'auto', true, 'network problem'],
    ['more renewals than expected', { renewals: 900, expected: 600, ownedInstances: 100 }, policy, 'auto', false, 'at or above'],
    ['a threshold of 0 (off, explicitly)', { renewals: 0, expected: 600, ownedInstances: 100 }, { ...policy, thresholdRatio: 0 }, 'auto', false, 'disabled'],
    ['a threshold of 1', { renewals: 599, expected: 600, ownedInstances: 100 }, { ...policy, thresholdRatio: 1 }, 'auto', true, 'below'],
    ['during warm-up', { renewals: 0, expected: 600, ownedInstances: 100 }, { ...policy, warmUpUntilMs: now + 1 }, 'auto', false, 'warming up'],
    ['switched off by an operator', { renewals: 0, expected: 600, ownedInstances: 100 }, policy, 'off', false, 'operator'],
    ['a minimum of 0 judges even one instance', { renewals: 0, expected: 6, ownedInstances: 1 }, { ...policy, minOwnedInstances: 0 }, 'auto', true, 'below'],
  ] as const)('%s', (_name, figures, rules, mode, active, reason) => {
    const assessment = assessSelfPreservation(figures, rules, now, mode);
    expect(assessment.active).toBe(active);
    expect(assessment.reason).toContain(reason);
  });
});

describe('expectedRenewals', () => {
  it.each([
    // owned since, interval -> expected in a 60 s window ending at 100 s
    [0, 10_000, 6],
    [40_000, 10_000, 6],
    [70_000, 10_000, 3],
    [95_000, 10_000, 0.5],
    [100_000, 10_000, 0],
    [0, 30_000, 2],
    [200_000, 10_000, 0],
  ])('owned since %i, every %i ms -> %f', (ownedSinceMs, intervalMs, expected) => {
    expect(expectedRenewals(ownedSinceMs, now, 60_000, intervalMs)).toBeCloseTo(expected);
  });
});

describe('hasRenewed', () => {
  it.each([
    // registered at, lease duration, lease ends at -> renewed since
    ['registered, never heard from again', 50_000, 30_000, 80_000, false],
    ['expired without a heartbeat', 50_000, 30_000, 80_000, false],
    ['one heartbeat 10 s later', 50_000, 30_000, 90_000, true],
    ['a heartbeat 1 ms later', 50_000, 30_000, 80_001, true],
    ['registered again later (the first register was elsewhere, or earlier)', 10_000, 30_000, 80_000, true],
    ['a lease made longer by a register again', 50_000, 60_000, 120_000, true],
  ])('%s', (_what, registeredAtMs, leaseDurationMs, leaseExpiresAtMs, renewed) => {
    expect(hasRenewed({ leaseExpiresAtMs, record: { registeredAtMs, leaseDurationMs } as never })).toBe(renewed);
  });
});
