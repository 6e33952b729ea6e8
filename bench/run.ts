/**
 * `npm run bench` (about 16 minutes, at most 19) and `npm run bench -- --quick` (at most 4.5):
 * every benchmark in one run on this machine, so that each figure stands next to a reference
 * measured in the same run. Prints progress as it goes, writes bench/results.json,
 * bench/out/results-<mode>.json, bench/RESULTS.md and bench/scaling.svg. A section or a point
 * of the scaling curve that would not fit in the time left is skipped and says so.
 * The peers run from dist/: `npm run bench` builds first.
 *
 * `npm run bench -- --scale [--instances=N] [--cores=C] [--services=S] [--budget-s=T]` runs only
 * the capacity benchmark (bench/scale.ts: one peer's memory and register rate at N instances, a
 * new peer catching up, five peers heartbeating), outside CI, and records it in bench/RESULTS.md.
 */
import { cpus, loadavg } from 'node:os';
import { writeFileSync } from 'node:fs';
import { benchConsul } from './consul.js';
import { benchConsulCatalog } from './consul-catalog.js';
import { benchDns } from './dns.js';
import { benchEtcd } from './etcd.js';
import { progress, quick, writeResult } from './lib.js';
import { benchMemory } from './memory.js';
import { benchNacos } from './nacos.js';
import { pinningAvailable } from './processes.js';
import { measureCluster, type ClusterOptions, type ClusterPoint } from './replication.js';
import { writeResultsMarkdown, type BenchResults } from './report.js';
import { benchSinglePeer } from './single-peer.js';
import { benchSse } from './sse.js';
import { benchXds } from './xds.js';
import { benchReadScale } from './read-scale.js';
import { runScale } from './scale.js';

/**
 * The script's own budget; `npm run bench` builds first (about 10 s), so the whole stays under
 * 19 (4.5) minutes: reads at scale (bench/read-scale.ts) take about 6 minutes (1 in the quick form).
 * The Nacos section (with its floors) and the Consul section (with its bare reference server)
 * added 65 s (30 s quick) to it, their own estimates.
 */
const BUDGET_MS = quick ? 245_000 : 1_110_000;
const startedMs = Date.now();
const left = () => BUDGET_MS - (Date.now() - startedMs);

/** Runs a section if its estimated time fits in what is left; otherwise records why not. */
async function section<T>(name: string, estimateMs: number, run: () => Promise<T>): Promise<T | { skipped: string }> {
  if (estimateMs > left()) {
    const skipped = `not enough time left in the ${Math.round(BUDGET_MS / 1_000)} s budget (needs about ${Math.round(estimateMs / 1_000)} s, ${Math.round(left() / 1_000)} s left)`;
    progress(`${name}: skipped, ${skipped}`);
    return { skipped };
  }
  try {
    return await run();
  } catch (error) {
    progress(`${name}: FAILED: ${(error as Error).stack ?? String(error)}`);
    return { skipped: `failed: ${(error as Error).message}` };
  }
}

/**
 * Points of the scaling curve: the primary one first (it carries the targets), then the others.
 * Each receiver's delay figures cover the last 10,000 records it applied, so the full form's
 * latency phases last 10 s at 1,000 writes/s and leave the warm-up out; the quick form's 2 s
 * include part of it (bench/replication.ts).
 */
const primary = { peers: 3, instances: quick ? 5_000 : 100_000 };
const clusterPoints: (ClusterOptions & { estimateMs: number })[] = quick
  ? [
      { ...primary, latencySeconds: 2, idleSeconds: 3, heartbeatRate: 500, estimateMs: 28_000 },
      { peers: 5, instances: 1_000, latencySeconds: 2, idleSeconds: 3, heartbeatRate: 500, estimateMs: 25_000 },
      { peers: 3, instances: 1_000, latencySeconds: 2, idleSeconds: 3, heartbeatRate: 500, estimateMs: 23_000 },
    ]
  : [
      { ...primary, latencySeconds: 10, idleSeconds: 30, heartbeatRate: 2_000, estimateMs: 113_000 },
      { peers: 3, instances: 1_000, latencySeconds: 10, idleSeconds: 10, heartbeatRate: 1_000, estimateMs: 38_000 },
      { peers: 3, instances: 10_000, latencySeconds: 10, idleSeconds: 10, heartbeatRate: 1_000, estimateMs: 43_000 },
      { peers: 5, instances: 10_000, latencySeconds: 10, idleSeconds: 10, heartbeatRate: 1_000, estimateMs: 48_000 },
      { peers: 7, instances: 10_000, latencySeconds: 10, idleSeconds: 10, heartbeatRate: 1_000, estimateMs: 53_000 },
    ];

if (process.argv.includes('--scale')) {
  await runScale();
  progress(`scale figures in bench/scale-results.json and ${writeResultsMarkdown()}`);
  process.exit(0);
}

progress(`benchmarks, ${quick ? 'quick' : 'full'} mode, budget ${Math.round(BUDGET_MS / 1_000)} s`);
const loadAverageAtStart = loadavg();
const singlePeer = await section('single peer', quick ? 30_000 : 165_000, () => benchSinglePeer({ quick }));
const etcd = await section('etcd', quick ? 15_000 : 45_000, () => benchEtcd({ quick }));
const memory = await section('memory', quick ? 15_000 : 60_000, () => benchMemory({ quick }));
const sse = await section('sse', 20_000, () => benchSse({ quick }));
const consul = await section('consul', quick ? 50_000 : 80_000, () => benchConsul({ quick }));
const consulCatalog = await section('consul catalog', quick ? 20_000 : 75_000, () => benchConsulCatalog({ quick }));
const dns = await section('dns', quick ? 30_000 : 60_000, () => benchDns({ quick }));
const xds = await section('xds', quick ? 40_000 : 70_000, () => benchXds({ quick }));
// Measured with its floors on a 2-core machine at load 13-20: about 105 s in the full form (1,000
// subscribers, the bare dgram and grpc-js floors, alternating list rounds); less on a quiet one.
const nacos = await section('nacos', quick ? 25_000 : 75_000, () => benchNacos({ quick }));
const points: ClusterPoint[] = [];
const skippedPoints: string[] = [];
for (const { estimateMs, ...options } of clusterPoints) {
  const point = await section(`cluster ${options.peers} peers, ${options.instances} instances`, estimateMs, () => measureCluster(options));
  if ('skipped' in point) skippedPoints.push(`${options.peers} peers / ${options.instances} instances: ${point.skipped}`);
  else points.push(point);
}

const readScale = await section('read scale', quick ? 60_000 : 360_000, () => benchReadScale({ quick }));

const results: BenchResults = {
  mode: quick ? 'quick' : 'full',
  startedAt: new Date(startedMs).toISOString(),
  durationSeconds: Math.round((Date.now() - startedMs) / 1_000),
  machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version, loadAverageAtStart, pinning: pinningAvailable() },
  singlePeer,
  etcd,
  memory,
  sse,
  consul,
  consulCatalog,
  dns,
  xds,
  nacos,
  cluster: { points, skipped: skippedPoints, primary },
  readScale,
};
writeResult(`results-${results.mode}`, results);
// Only a full run is recorded in bench/ (and so in RESULTS.md); a quick one stays in bench/out/.
if (!quick) writeFileSync(new URL('./results.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
progress(`done in ${results.durationSeconds} s; ${writeResultsMarkdown(quick ? results : undefined)}`);
