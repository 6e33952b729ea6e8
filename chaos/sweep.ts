/**
 * `npm run chaos -- --sweep N`: N seeds one after another (see sweepSeeds), every cluster size
 * of `--peers` for each, one line per seed and a summary line, stopping at the first failing
 * run with the command that replays it. The runs themselves are injected (`runForm`), so the
 * bookkeeping is tested without starting a peer.
 */
import type { ChaosSweepSummary } from '../bench/report.js';
import { choiceFlags, replayCommand, sweepSeeds, type ChaosCliOptions } from './options.js';

/** What one run (one seed, one cluster size) came to. */
export interface FormOutcome {
  peers: number;
  ok: boolean;
  violations: number;
  violationsByProperty: Record<string, number>;
  ops: number;
  faults: number;
  kills: number;
  convergedAfterMs: number | null;
  /** Wall time of the run, start-up and final phase included. */
  seconds: number;
}

export interface SweepDeps {
  runForm(seed: number, peers: number): Promise<FormOutcome>;
  /** One line of output. */
  print(line: string): void;
  /** Keeps the summary (bench/chaos-sweeps.json); called after every seed and at the end. */
  save(summary: ChaosSweepSummary): void;
  nowIso(): string;
}

/** The command a sweep was started with, as its summary names it. */
export function sweepCommand(options: ChaosCliOptions, firstSeed: number): string {
  const flags = [`--sweep ${options.sweep ?? 1}`, `--seed ${firstSeed}`, `--peers ${options.peers.join(',')}`, ...choiceFlags(options)];
  return `npm run chaos -- ${flags.join(' ')}`;
}

/** `seed 8675309 (3/40): 3 peers PASS (2,100 ops, 18 faults, 8 kills, converged in 40 ms, 101 s) | 5 peers ...` */
export function formatSeedLine(seed: number, index: number, total: number, forms: readonly FormOutcome[]): string {
  const parts = forms.map((form) => {
    const verdict = form.ok ? 'PASS' : `FAIL (${form.violations}: ${Object.entries(form.violationsByProperty).map(([p, n]) => `${p} ${n}`).join(', ')})`;
    const converged = form.convergedAfterMs === null ? 'never converged' : `converged in ${form.convergedAfterMs} ms`;
    return `${form.peers} peers ${verdict} (${form.ops.toLocaleString('en-US')} ops, ${form.faults} faults, ${form.kills} kills, ${converged}, ${form.seconds} s)`;
  });
  return `seed ${seed} (${index}/${total}): ${parts.join(' | ')}`;
}

/** The summary line: how many seeds of how many, and the failure with its replay command. */
export function formatSweepLine(summary: ChaosSweepSummary): string {
  const range = summary.lastSeed === null ? `from ${summary.firstSeed}` : `${summary.firstSeed}..${summary.lastSeed}`;
  const head = `sweep of seeds ${range} x ${summary.peers.join(',')} peers, ${summary.durationS} s of faults each:`;
  if (summary.error) {
    const e = summary.error;
    return `${head} STOPPED at seed ${e.seed} with ${e.peers} peers, no verdict: ${e.message} (after ${summary.seedsPassed} seeds passed; replay: ${e.replay})`;
  }
  if (summary.failure) {
    const f = summary.failure;
    return `${head} FAILED at seed ${f.seed} with ${f.peers} peers (${f.violations} violations) after ${summary.seedsPassed} seeds passed; replay: ${f.replay}`;
  }
  return `${head} ${summary.seedsPassed} of ${summary.seedsAsked} seeds passed every form, no violation`;
}

/** Runs the sweep; resolves true when every seed passed. */
export async function runSweep(options: ChaosCliOptions, deps: SweepDeps): Promise<boolean> {
  const seeds = sweepSeeds(options.seed, options.sweep ?? 1);
  const summary: ChaosSweepSummary = {
    command: sweepCommand(options, options.seed),
    firstSeed: options.seed,
    seedsAsked: seeds.length,
    seedsDone: 0,
    seedsPassed: 0,
    lastSeed: null,
    peers: [...options.peers],
    durationS: Math.round(options.durationMs / 1_000),
    restarts: options.restarts,
    kills: options.kills,
    serial: options.serial,
    failure: null,
    error: null,
    running: true,
    startedAt: deps.nowIso(),
    at: deps.nowIso(),
  };
  deps.save(summary);
  for (const [i, seed] of seeds.entries()) {
    const forms: FormOutcome[] = [];
    for (const peers of options.peers) {
      let form: FormOutcome;
      try {
        form = await deps.runForm(seed, peers);
      } catch (error) {
        summary.error = { seed, peers, message: (error as Error).message, replay: replayCommand(options, seed, peers) };
        summary.running = false;
        summary.at = deps.nowIso();
        deps.save(summary);
        deps.print(formatSweepLine(summary));
        return false;
      }
      forms.push(form);
      if (!form.ok) {
        summary.failure = { seed, peers, violations: form.violations, violationsByProperty: form.violationsByProperty, replay: replayCommand(options, seed, peers) };
        break;
      }
    }
    summary.seedsDone += 1;
    summary.lastSeed = seed;
    if (!summary.failure) summary.seedsPassed += 1;
    summary.at = deps.nowIso();
    deps.print(formatSeedLine(seed, i + 1, seeds.length, forms));
    if (summary.failure) break;
    if (i < seeds.length - 1) deps.save(summary);
  }
  summary.running = false;
  summary.at = deps.nowIso();
  deps.save(summary);
  deps.print(formatSweepLine(summary));
  return summary.failure === null;
}
