import { describe, expect, it } from 'vitest';
import { DEFAULT_DURATION_MS, parseChaosArgs, parseDuration } from '../../../chaos/options.js';

describe('npm run chaos options', () => {
  it.each([
    ['90s', 90_000],
    ['30m', 1_800_000],
    ['1h', 3_600_000],
    ['15000ms', 15_000],
    ['45', 45_000],
    ['1.5m', 90_000],
  ])('reads the duration %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', 'soon', '10x', '5s', '-3m'])('refuses the duration %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/--duration/);
  });

  it('has defaults: 90 s, 3 and 5 peers, both kinds of restart and kill, faults overlapping', () => {
    expect(parseChaosArgs([], 7)).toEqual({ durationMs: DEFAULT_DURATION_MS, seed: 7, peers: [3, 5], clients: null, restarts: 'both', kills: 'both', serial: false });
  });

  it('reads every option', () => {
    expect(parseChaosArgs(['--duration', '30m', '--seed', '42', '--peers', '5', '--clients', '20', '--restarts', 'without', '--kills', 'detected', '--serial'], 7)).toEqual({
      durationMs: 1_800_000,
      seed: 42,
      peers: [5],
      clients: 20,
      restarts: 'without',
      kills: 'detected',
      serial: true,
    });
  });

  it('reads --kills none (network faults only)', () => {
    expect(parseChaosArgs(['--kills', 'none'], 7).kills).toBe('none');
  });

  it.each([
    [['--peers', '9'], /--peers/],
    [['--seed', 'x'], /--seed/],
    [['--restarts', 'sometimes'], /--restarts/],
    [['--kills', 'never'], /--kills/],
    [['--seed'], /a value is required/],
    [['--verbose'], /unknown option --verbose/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseChaosArgs(argv, 7)).toThrow(message);
  });
});
