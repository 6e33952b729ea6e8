import { describe, expect, it } from 'vitest';
import { DEFAULT_DURATION_MS, parseChaosArgs, parseDuration, replayCommand, SEED_MAX, sweepSeeds } from '../../../chaos/options.js';

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
    expect(parseChaosArgs([], 7)).toEqual({ durationMs: DEFAULT_DURATION_MS, seed: 7, peers: [3, 5], clients: null, restarts: 'both', kills: 'both', serial: false, sweep: null, peerLogs: null });
  });

  it('reads every option', () => {
    expect(parseChaosArgs(['--duration', '30m', '--seed', '42', '--peers', '5', '--clients', '20', '--restarts', 'without', '--kills', 'detected', '--serial', '--peer-logs', 'info'], 7)).toEqual({
      durationMs: 1_800_000,
      seed: 42,
      peers: [5],
      clients: 20,
      restarts: 'without',
      kills: 'detected',
      serial: true,
      sweep: null,
      peerLogs: 'info',
    });
  });

  it('reads --sweep N, with or without the first seed', () => {
    expect(parseChaosArgs(['--sweep', '40'], 7)).toMatchObject({ sweep: 40, seed: 7, peers: [3, 5], durationMs: 90_000 });
    expect(parseChaosArgs(['--sweep', '40', '--seed', '8675309', '--peers', '5'], 7)).toMatchObject({ sweep: 40, seed: 8675309, peers: [5] });
  });

  it('refuses a --peer-logs level other than info or debug', () => {
    expect(() => parseChaosArgs(['--peer-logs', 'trace'], 7)).toThrow(/--peer-logs: info or debug/);
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
    [['--sweep'], /a value is required/],
    [['--sweep', '0'], /--sweep: an integer from 1 to 1000/],
    [['--sweep', '2.5'], /--sweep/],
    [['--sweep', '1001'], /--sweep/],
    [['--seed', String(2 ** 31)], /--seed/],
    [['--verbose'], /unknown option --verbose/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseChaosArgs(argv, 7)).toThrow(message);
  });

  it('gives a sweep consecutive seeds from the first, wrapping past the largest seed', () => {
    expect(sweepSeeds(8675309, 3)).toEqual([8675309, 8675310, 8675311]);
    expect(sweepSeeds(SEED_MAX - 1, 3)).toEqual([SEED_MAX - 1, SEED_MAX, 0]);
    expect(sweepSeeds(5, 1)).toEqual([5]);
  });

  it('starts a sweep without --seed from the default seed, so two runs try different seeds', () => {
    const first = sweepSeeds(parseChaosArgs(['--sweep', '40'], 111).seed, 40);
    const second = sweepSeeds(parseChaosArgs(['--sweep', '40'], 222_222).seed, 40);
    expect(first).toHaveLength(40);
    expect(new Set(first).size).toBe(40);
    expect(first.filter((seed) => second.includes(seed))).toEqual([]);
  });

  it('names the replay command of one failing run with the flags that differ from the defaults', () => {
    expect(replayCommand(parseChaosArgs([], 1), 8675309, 5)).toBe('npm run chaos -- --seed 8675309 --peers 5');
    expect(replayCommand(parseChaosArgs(['--duration', '60s', '--kills', 'detected', '--serial', '--restarts', 'without', '--clients', '9'], 1), 42, 3)).toBe(
      'npm run chaos -- --seed 42 --peers 3 --duration 60s --clients 9 --restarts without --kills detected --serial',
    );
  });
});
