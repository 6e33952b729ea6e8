/**
 * `npm run chaos [-- --duration 90s --seed N --peers 3,5 --clients N --restarts with|without|both
 *                   --kills bounce|detected|both|none --serial --sweep N]`
 *
 * Runs the chaos test once per cluster size (3 and 5 peers by default, 90 s of faults each),
 * prints progress, the verdict and figures, and on failure the seed and the exact failing
 * history; writes every history to bench/out/chaos-<peers>p-<seed>-<variant>.json, the summary of the
 * runs to bench/chaos-results.json, and regenerates bench/RESULTS.md. Exits 1 when a run
 * fails. Long mode: `--duration 30m`. `--sweep N` runs N seeds in a row (chaos/sweep.ts): one
 * line per seed, the sweep's summary in bench/chaos-sweeps.json (after every seed) and
 * RESULTS.md, and at the first failure its verdict and replay command.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { writeResultsMarkdown } from '../bench/report.js';
import type { CheckResult } from './checker.js';
import { probeDataDir } from './data-dir-probe.js';
import type { ChaosSweepSummary } from '../bench/report.js';
import { parseChaosArgs, type ChaosCliOptions } from './options.js';
import { formatVerdict } from './report.js';
import { runChaos, type ChaosOptions } from './run.js';
import { runSweep } from './sweep.js';

const stamp = () => new Date().toISOString().slice(11, 19);
const log = (line: string) => process.stdout.write(`[${stamp()}] ${line}\n`);

let options: ChaosCliOptions;
try {
  options = parseChaosArgs(process.argv.slice(2), Date.now() % 1_000_000);
} catch (error) {
  process.stderr.write(`chaos: ${(error as Error).message}\n`);
  process.exit(2);
}

let restarts = options.restarts;
let dataDirNote = 'restarts without a data dir only (as asked)';
if (restarts !== 'without') {
  log('checking whether the peer keeps its data dir across a SIGKILL');
  const support = await probeDataDir();
  if (support.durable) {
    dataDirNote = `restarts ${restarts === 'both' ? 'with and without' : 'with'} a data dir (${support.reason})`;
  } else {
    dataDirNote = `data-dir variant SKIPPED: ${support.reason}; restarts without a data dir only`;
    log(dataDirNote);
    if (restarts === 'with') {
      log('nothing left to run (--restarts with)');
      process.exit(0);
    }
    restarts = 'without';
  }
}

const outDir = new URL('../bench/out/', import.meta.url);
mkdirSync(outDir, { recursive: true });
const variant = `${options.kills}${options.serial ? '-serial' : ''}-${Math.round(options.durationMs / 1_000)}s`;

/**
 * Attempts at starting a run's cluster: on a machine loaded by other work, five peer processes
 * started at once may not all listen within the harness's 20 s. That says nothing about the
 * registry (no fault was injected yet), so the run is tried again after a pause.
 */
const START_ATTEMPTS = 3;
const START_RETRY_PAUSE_MS = 30_000;

/** One run of one seed and cluster size; its history goes to bench/out/. */
async function runOne(seed: number, size: number, runLog: ChaosOptions['log']) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runOneAttempt(seed, size, runLog);
    } catch (error) {
      const message = (error as Error).message;
      if (attempt >= START_ATTEMPTS || !/waiting for the peer to start|waiting for .*ready/.test(message)) throw error;
      log(`seed ${seed}, ${size} peers: the cluster did not start (${message}); trying again in ${START_RETRY_PAUSE_MS / 1_000} s (attempt ${attempt + 1} of ${START_ATTEMPTS})`);
      await new Promise((resolve) => setTimeout(resolve, START_RETRY_PAUSE_MS));
    }
  }
}

async function runOneAttempt(seed: number, size: number, runLog: ChaosOptions['log']) {
  const { history, result, peerLogs } = await runChaos({
    seed,
    peers: size,
    durationMs: options.durationMs,
    clients: options.clients ?? size * 10,
    restarts,
    kills: options.kills,
    serial: options.serial,
    pollIntervalMs: options.durationMs > 600_000 ? 500 : 250,
    peerLogLevel: options.peerLogs ?? 'warn',
    log: runLog,
  });
  const file = new URL(`chaos-${size}p-${seed}-${variant}.json`, outDir);
  writeFileSync(file, JSON.stringify(history));
  if (options.peerLogs !== null) {
    const logFile = new URL(`chaos-${size}p-${seed}-${variant}-peer-logs.jsonl`, outDir);
    const lines = peerLogs.flatMap(({ peer, incarnation, lines: logged }) => logged.map((line) => JSON.stringify({ ...line, '@peer': peer, '@incarnation': incarnation })));
    writeFileSync(logFile, lines.length === 0 ? '' : `${lines.join('\n')}\n`);
    log(`peer logs: ${logFile.pathname}`);
  }
  return { history, result, file };
}

function countByProperty(result: CheckResult): Record<string, number> {
  const byProperty: Record<string, number> = {};
  for (const violation of result.violations) byProperty[violation.property] = (byProperty[violation.property] ?? 0) + 1;
  return byProperty;
}

/** Keeps the latest of each command in a bench/ JSON file (at most 20), newest last, and regenerates RESULTS.md. */
function keepLatest<T extends { command: string }>(name: string, entries: T[]): void {
  const resultsFile = new URL(`../bench/${name}`, import.meta.url);
  // Read just before writing: a sweep of the other cluster size may run beside this one.
  const previous = existsSync(resultsFile) ? (JSON.parse(readFileSync(resultsFile, 'utf8')) as T[]) : [];
  const commands = new Set(entries.map((entry) => entry.command));
  const kept = [...previous.filter((entry) => !commands.has(entry.command)), ...entries].slice(-20);
  writeFileSync(resultsFile, `${JSON.stringify(kept, null, 2)}\n`);
}

if (options.sweep !== null) {
  log(`sweep: ${options.sweep} seeds from ${options.seed}, ${options.peers.join(' and ')} peers each, ${Math.round(options.durationMs / 1_000)} s of faults per run; ${dataDirNote}`);
  const passed = await runSweep(options, {
    runForm: async (seed, size) => {
      const startedMs = Date.now();
      const { history, result, file } = await runOne(seed, size, undefined);
      if (!result.ok) console.log(`\n${formatVerdict(history, result)}\nhistory: ${file.pathname}\n`);
      return {
        peers: size,
        ok: result.ok,
        violations: result.violations.length,
        violationsByProperty: countByProperty(result),
        ops: history.ops.length,
        faults: result.figures.faults,
        kills: result.figures.kills,
        convergedAfterMs: result.figures.convergedAfterMs,
        seconds: Math.round((Date.now() - startedMs) / 1_000),
      };
    },
    print: log,
    save: (summary: ChaosSweepSummary) => {
      keepLatest('chaos-sweeps.json', [summary]);
      writeResultsMarkdown();
    },
    nowIso: () => new Date().toISOString(),
  });
  process.exit(passed ? 0 : 1);
}

const summary: ({ command: string } & Record<string, unknown>)[] = [];
let failed = false;
for (const size of options.peers) {
  const { history, result, file } = await runOne(options.seed, size, log);
  console.log(`\n${formatVerdict(history, result)}\nhistory: ${file.pathname}\n`);
  failed ||= !result.ok;
  summary.push({
    command: `npm run chaos -- --seed ${options.seed} --peers ${size} --duration ${Math.round(options.durationMs / 1_000)}s --restarts ${options.restarts} --kills ${options.kills}${options.serial ? ' --serial' : ''}`,
    violationsByProperty: countByProperty(result),
    seed: options.seed,
    peers: size,
    durationS: Math.round(options.durationMs / 1_000),
    restarts,
    kills: options.kills,
    dataDir: dataDirNote,
    ok: result.ok,
    violations: result.violations.length,
    figures: result.figures,
    convergenceTargetMs: history.settings.convergenceTargetMs,
    at: new Date().toISOString(),
  });
}
// bench/chaos-results.json keeps the latest run of each command (at most 20), newest last.
keepLatest('chaos-results.json', summary);
log(`results: ${writeResultsMarkdown()}`);
log(failed ? `FAILED (seed ${options.seed})` : `all runs passed (seed ${options.seed}; ${dataDirNote})`);
process.exit(failed ? 1 : 0);
