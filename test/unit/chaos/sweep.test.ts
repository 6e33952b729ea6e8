import { describe, expect, it } from 'vitest';
import type { ChaosSweepSummary } from '../../../bench/report.js';
import { sweepResult } from '../../../bench/report.js';
import { parseChaosArgs } from '../../../chaos/options.js';
import { runSweep, type FormOutcome } from '../../../chaos/sweep.js';

const pass = (peers: number): FormOutcome => ({ peers, ok: true, violations: 0, violationsByProperty: {}, ops: 4_321, faults: 20, kills: 9, convergedAfterMs: 48, seconds: 101 });

/** Runs a sweep whose runs are scripted: `failing` names the seed and size that fail. */
async function sweep(argv: string[], failing?: { seed: number; peers: number }, broken?: { seed: number; peers: number }) {
  const ran: string[] = [];
  const lines: string[] = [];
  const saved: ChaosSweepSummary[] = [];
  const passed = await runSweep(parseChaosArgs(argv, 1), {
    runForm: async (seed, peers) => {
      ran.push(`${seed}/${peers}`);
      if (broken?.seed === seed && broken.peers === peers) throw new Error('timed out after 20000 ms waiting for the peer to start');
      if (failing?.seed === seed && failing.peers === peers) {
        return { ...pass(peers), ok: false, violations: 5, violationsByProperty: { 'no-eviction': 5 } };
      }
      return pass(peers);
    },
    print: (line) => lines.push(line),
    save: (summary) => saved.push(structuredClone(summary)),
    nowIso: () => '2026-12-01T09:00:00.000Z',
  });
  return { passed, ran, lines, saved, last: saved.at(-1)! };
}

describe('npm run chaos -- --sweep N', () => {
  it('runs every form of each seed in turn, one line per seed, then the summary', async () => {
    const { passed, ran, lines, last } = await sweep(['--sweep', '3', '--seed', '100']);
    expect(passed).toBe(true);
    expect(ran).toEqual(['100/3', '100/5', '101/3', '101/5', '102/3', '102/5']);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toBe(
      'seed 100 (1/3): 3 peers PASS (4,321 ops, 20 faults, 9 kills, converged in 48 ms, 101 s) | 5 peers PASS (4,321 ops, 20 faults, 9 kills, converged in 48 ms, 101 s)',
    );
    expect(lines[3]).toBe('sweep of seeds 100..102 x 3,5 peers, 90 s of faults each: 3 of 3 seeds passed every form, no violation');
    expect(last).toMatchObject({ command: 'npm run chaos -- --sweep 3 --seed 100 --peers 3,5', seedsAsked: 3, seedsDone: 3, seedsPassed: 3, lastSeed: 102, running: false, failure: null });
    expect(sweepResult(last)).toBe('PASS: 3 seeds x 2 forms, no violation');
  });

  it('stops at the first failing run and names the command that replays it', async () => {
    const { passed, ran, lines, last } = await sweep(['--sweep', '40', '--seed', '8675309'], { seed: 8675310, peers: 3 });
    expect(passed).toBe(false);
    // The failing seed's 5-peer form is not run, nor any later seed.
    expect(ran).toEqual(['8675309/3', '8675309/5', '8675310/3']);
    expect(lines[1]).toMatch(/^seed 8675310 \(2\/40\): 3 peers FAIL \(5: no-eviction 5\)/);
    expect(lines.at(-1)).toBe(
      'sweep of seeds 8675309..8675310 x 3,5 peers, 90 s of faults each: FAILED at seed 8675310 with 3 peers (5 violations) after 1 seeds passed; replay: npm run chaos -- --seed 8675310 --peers 3',
    );
    expect(last).toMatchObject({ seedsDone: 2, seedsPassed: 1, running: false, failure: { seed: 8675310, peers: 3, replay: 'npm run chaos -- --seed 8675310 --peers 3' } });
    expect(sweepResult(last)).toContain('**FAIL** at seed 8675310, 3 peers (5: no-eviction 5), after 1 seeds passed');
  });

  it('keeps its summary after every seed, so a sweep still running shows how far it got', async () => {
    const { saved } = await sweep(['--sweep', '3', '--seed', '7', '--peers', '5']);
    expect(saved.map((s) => [s.seedsDone, s.running])).toEqual([
      [0, true],
      [1, true],
      [2, true],
      [3, false],
    ]);
    expect(sweepResult(saved[2]!)).toBe('running: 2 seeds x 1 form of 3 passed so far, no violation');
    expect(saved[0]!.command).toBe('npm run chaos -- --sweep 3 --seed 7 --peers 5');
  });

  it('stops, with no verdict, at a run that could not be carried out, and says which', async () => {
    const { passed, ran, lines, last } = await sweep(['--sweep', '5', '--seed', '10'], undefined, { seed: 11, peers: 5 });
    expect(passed).toBe(false);
    expect(ran).toEqual(['10/3', '10/5', '11/3', '11/5']);
    expect(lines.at(-1)).toBe(
      'sweep of seeds 10..10 x 3,5 peers, 90 s of faults each: STOPPED at seed 11 with 5 peers, no verdict: timed out after 20000 ms waiting for the peer to start (after 1 seeds passed; replay: npm run chaos -- --seed 11 --peers 5)',
    );
    expect(last).toMatchObject({ running: false, failure: null, seedsDone: 1, error: { seed: 11, peers: 5 } });
    expect(sweepResult(last)).toMatch(/^stopped at seed 11, 5 peers, with no verdict/);
  });
});
