/**
 * Capacity at scale (issue 36), outside CI: `npm run bench -- --scale [--instances=N] [--cores=C]`
 * or `npx tsx bench/scale.ts ...` after `npm run build`. Real peers from dist/, each pinned to
 * its own cores where the machine has enough (2 per peer with at least 2 x peers + 2 CPUs,
 * else 1, else none), the load generators (bench/scale-loader.ts, one process per free core, at
 * most 8, 64 requests in flight each) on the other cores. Three phases, each skipped with a
 * reason when the time left (`--budget-s`) would not fit it:
 *   1. one peer: RSS idle and at N/10, N/2 and N instances (five metadata keys), 2 s after each
 *      step, the slope in bytes per instance, RSS again after `--idle-s` (20) idle at N, the register rate
 *      (the first 10,000 apart: a cold peer);
 *   2. a new peer joins it (`--no-join` leaves it out): time until it is ready and until it lists every instance, its RSS,
 *      and the serving peer's CPU seconds meanwhile;
 *   3. five peers (fresh), the instances registered over all of them in steps to N/10, N/2 and
 *      N, those registered so far heartbeating on their own peers once per `--heartbeat-s`
 *      after each step (15 s, 15 s, then up to 60 s): every peer's RSS idle and at each step
 *      and its slope, the slopes of each peer's V8 heap (committed, in use, young generation),
 *      and the last step's heartbeat latency p50 / p99 / max; then the heal (`--no-heal` leaves
 *      it out): the last peer stopped 20 s (SIGSTOP) while the others take 1% more
 *      registrations, and the time from its SIGCONT until every peer's digest agrees.
 * Figures go to bench/scale-results.json (shown in bench/RESULTS.md) and, with `--out=DIR`,
 * to DIR/scale.json and DIR/scale.md. `--node-flags="--max-semi-space-size=4 ..."` runs the
 * peers with those Node flags instead of `PEER_NODE_FLAGS` (`--node-flags=` with none), to
 * measure what a flag does to RSS. `--listing-cache-bytes=N` sets the peers'
 * `limits.listingCacheMaxBytes` (a bounded cache that fills as instances heartbeat: 0 leaves
 * its filling out of the slope); `--heap-snapshots=DIR` has the cluster's first peer write a
 * heap snapshot at each step (bench/heap-totals.ts and bench/heap-retainers.ts read them).
 * `--heal-profile=DIR` profiles the heal's paused peer (bench/cpu-prof-preload.cjs: from just
 * before its pause until its digest agrees, at least 4 s after it goes on) into
 * DIR/<pid>-1.cpuprofile, for bench/cpu-profile-top.ts.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PEER_NODE_FLAGS } from '../src/node-flags.js';
import { freePort } from '../test/support/fault-proxy.js';
import { getJson, metricFigure, pool, profileWritten, progress, round, seenBackBy, sleep, timeToAgree, timeToAnswer } from './lib.js';
import { linearFit } from './memory.js';
import { pinningAvailable, startServer, totalCpuMsOf, type ServerProcess } from './processes.js';
import type { LoaderFigures, LoaderTask } from './scale-loader.js';
import { renderScaleMarkdown } from './scale-report.js';

export interface ScaleOptions {
  instances: number;
  /** CPUs to use, numbered 0 to cores - 1. */
  cores: number;
  services: number;
  peers: number;
  heartbeatSeconds: number;
  budgetMs: number;
  /** The peers' entry point (`--main=PATH`, default dist/main.js): another build's, to compare. */
  main: string;
  /** Run the heartbeating cluster phase (`--no-cluster` leaves it out). */
  withCluster: boolean;
  /** Run the join phase (`--no-join` leaves it out). */
  withJoin: boolean;
  /** End the cluster phase with a peer paused and healed (`--no-heal` leaves it out). */
  withHeal: boolean;
  /**
   * Seconds the loaded peer stays idle before its settled RSS (`--idle-s`, default 20). Past
   * the Eureka delta window (3 minutes) the peer holds what a peer whose instances have not
   * changed lately holds.
   */
  idleSeconds: number;
  /** The peers' Node flags (`--node-flags`, default `PEER_NODE_FLAGS`). */
  nodeFlags: readonly string[];
  /**
   * The peers' `limits.listingCacheMaxBytes` (`--listing-cache-bytes=N`; absent: the default,
   * 8 MB). The cache is bounded, but it fills while the instances heartbeat, so a slope through
   * small counts carries its filling: 0 measures the slope without it.
   */
  listingCacheBytes?: number;
  /**
   * `--heap-snapshots=DIR`: the cluster's first peer writes a heap snapshot into DIR at each
   * step, after its RSS is read (the peer holds its loop a few seconds meanwhile, so the
   * heartbeat figures are not comparable), to read with bench/heap-retainers.ts and
   * bench/heap-totals.ts.
   */
  heapSnapshotDir?: string;
  /** Where the heal's paused peer writes a CPU profile of its pause and its first seconds after (`--heal-profile=DIR`). */
  healProfileDir?: string;
  /** The peers' `--log-level` (`--peer-log-level=info` to read a heal's membership and anti-entropy lines in bench/out/scale-peer-N.log; default warn). */
  peerLogLevel: string;
  outDir?: string;
}

export interface ScaleResult {
  /** `idleSeconds` and `nodeFlags` are absent from results recorded before 2026-12-05 (20 s; `PEER_NODE_FLAGS` then). */
  options: Omit<ScaleOptions, 'outDir' | 'withCluster' | 'withJoin' | 'withHeal' | 'peerLogLevel' | 'main' | 'idleSeconds' | 'nodeFlags' | 'heapSnapshotDir' | 'healProfileDir'> & Partial<Pick<ScaleOptions, 'idleSeconds' | 'nodeFlags'>>;
  machine: { cpus: number; model: string; node: string };
  layout: { peerCores: string[]; loaderCores: string; loaders: number };
  startedAt: string;
  durationSeconds: number;
  onePeer: { skipped: string } | OnePeer;
  join: { skipped: string } | Join;
  cluster: { skipped: string } | Cluster;
}

interface OnePeer {
  idleRssMb: number;
  /**
   * RSS and the V8 heap in use (`nodejs_heap_size_used_bytes` on the peer's /metrics: no
   * collection forced, so it holds some garbage too) at each step; the heap is absent from
   * results recorded before 2026-12-05, as is its slope.
   */
  points: { instances: number; rssMb: number; heapUsedMb?: number }[];
  slopeBytesPerInstance: number;
  /** The slope of the heap in use through the same points. */
  heapSlopeBytesPerInstance?: number;
  aboveIdleBytesPerInstance: number;
  rSquared: number;
  /**
   * RSS at N once the peer has been idle `idleSeconds` (V8's memory reducer gives back heap
   * it grew for the load after some seconds without allocation): what a peer holding N needs.
   */
  settledRssMb: number;
  settledAboveIdleBytesPerInstance: number;
  registerPerSecond: number;
  coldRegisterPerSecond: number | null;
  errors: number;
}

interface Join {
  readyMs: number;
  allListedMs: number;
  newPeerRssMb: number;
  servingPeerCpuSeconds: number;
  /** The new peer's own CPU from its start until it listed every instance (absent before 2026-12-07 evening). */
  newPeerCpuSeconds?: number;
}

interface Cluster {
  peers: number;
  registerSeconds: number;
  allListedMs: number;
  heartbeatsPerSecond: number;
  heartbeatSeconds: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  skippedBeats: number;
  /** Each peer's RSS at the end. */
  rssMb: number[];
  /** Each peer's RSS before any instance, at N/10, N/2 and N (each after a while heartbeating), and the slope through those three; absent from results recorded before 2026-12-06. */
  idleRssMb?: number[];
  points?: ClusterPoint[];
  slopeBytesPerInstance?: number[];
  /** The slopes of each peer's V8 heap committed, heap in use and young generation committed through the same points; absent before 2026-12-06 08:30. */
  heapSlopes?: { committed: number[]; used: number[]; young: number[] };
  /** The last peer paused and let go on (absent before 2026-12-07 evening, or `skipped` with why). */
  heal?: Heal | { skipped: string };
}

/**
 * The cluster's last peer stopped (SIGSTOP) for `pausedSeconds` while the others take
 * `registeredMeanwhile` new registrations, then continued (SIGCONT): how long until every peer
 * holds the same anti-entropy digest (the whole registry agreed, not only counts), and until the
 * paused peer lists every instance.
 */
interface Heal {
  pausedSeconds: number;
  registeredMeanwhile: number;
  agreedMs: number;
  pausedPeerListedMs: number;
  /** When the paused peer first answered a `GET /healthz` sent at its SIGCONT (absent from runs before 2026-12-07 20:00). */
  pausedPeerAnsweredMs?: number;
  /**
   * When each other peer logged it back ("peer back", membership), from their log lines (only
   * with `--peer-log-level=info` or debug; null for a peer that did not log it).
   */
  seenBackMs?: (number | null)[];
  /**
   * Peer calls the paused peer skipped as abandoned by their callers when it went on
   * (`registry_peer_calls_abandoned_total`, src/http/abandoned-calls.ts; absent before 2026-12-07 23:00).
   */
  skippedCalls?: number;
}

/** Each peer's figures at one step of the cluster phase (the heap ones absent from results recorded before 2026-12-06 08:30). */
interface ClusterPoint {
  instances: number;
  rssMb: number[];
  heap?: HeapFigures[];
}

/** A peer's V8 heap now, in MB, from its /metrics (no collection forced): committed, in use, and its young generation committed. */
interface HeapFigures {
  committedMb: number;
  usedMb: number;
  youngMb: number;
}

const root = fileURLToPath(new URL('../', import.meta.url));
/** Every process this script started and has not stopped yet: killed if the script is told to stop (scale-device.sh's time limit). */
const children = new Set<{ kill(signal: NodeJS.Signals): boolean }>();
const SETTLE_MS = 2_000;
const COLD_COUNT = 10_000;
const IN_FLIGHT_PER_LOADER = 64;
const MAX_LOADERS = 8;
/** How long the instances registered at N/10 and N/2 heartbeat before each peer's RSS is read. */
const STEP_HEARTBEAT_MS = 15_000;
/** How long the heal phase keeps a peer stopped (issue 36: heal after a 20 s pause). */
const PAUSE_MS = 20_000;
/** What the heal phase needs after the heartbeats: the pause, the heal and some margin. */
const HEAL_RESERVE_MS = 60_000;

/** Which cores each peer and the loaders get. Pure. */
export function coreLayout(cores: number, peers: number): { peerCores: string[]; loaderCores: string } {
  const all = `0-${cores - 1}`;
  const perPeer = cores >= 2 * peers + 2 ? 2 : cores >= peers + 1 ? 1 : 0;
  if (perPeer === 0) return { peerCores: Array.from({ length: peers }, () => all), loaderCores: all };
  const peerCores = Array.from({ length: peers }, (_, k) => (perPeer === 1 ? `${k}` : `${2 * k}-${2 * k + 1}`));
  const first = perPeer * peers;
  return { peerCores, loaderCores: first === cores - 1 ? `${first}` : `${first}-${cores - 1}` };
}

function coreCount(list: string): number {
  const [from, to] = list.split('-').map(Number) as [number, number | undefined];
  return to === undefined ? 1 : to - from + 1;
}

interface PeerSpec {
  id: string;
  port: number;
}

/** A cluster file naming `peers` (seeds), the rate limit and the per-service cap off for the load. */
function clusterFile(name: string, peers: PeerSpec[], listingCacheBytes: number | undefined): string {
  const file = join(tmpdir(), `registry-scale-${process.pid}-${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      cluster: { name: 'scale', profile: 'lan' },
      peers: peers.map((peer) => ({ id: peer.id, url: `http://127.0.0.1:${peer.port}`, region: 'local', zone: 'a' })),
      limits: {
        rateLimitPerSecond: 0,
        instancesPerServiceMax: 10_000_000,
        instancesPerNamespaceMax: 100_000_000,
        ...(listingCacheBytes === undefined ? {} : { listingCacheMaxBytes: listingCacheBytes }),
      },
    }),
  );
  return file;
}

/** `command` pinned to `cores` with taskset, or as it is where taskset is missing. */
function pinnedTo(cores: string, command: string[]): [string, string[]] {
  return pinningAvailable() ? ['taskset', ['-c', cores, ...command]] : [command[0]!, command.slice(1)];
}

async function startScalePeer(spec: PeerSpec, seeds: PeerSpec[], cores: string, readyTimeoutMs: number, options: ScaleOptions): Promise<ServerProcess> {
  const snapshots = options.heapSnapshotDir === undefined ? [] : ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${options.heapSnapshotDir}`];
  // SIGUSR2 is the heap snapshot's or the profile's, not both.
  if (options.heapSnapshotDir !== undefined && options.healProfileDir !== undefined) throw new Error('--heap-snapshots and --heal-profile both signal SIGUSR2: name one');
  const profiler = options.healProfileDir === undefined ? [] : [`--require=${join(root, 'bench/cpu-prof-preload.cjs')}`];
  const config = clusterFile(spec.id, seeds, options.listingCacheBytes);
  const [command, args] = pinnedTo(cores, [process.execPath, ...options.nodeFlags, ...snapshots, ...profiler, options.main, '--config', config, '--id', spec.id, '--log-level', options.peerLogLevel]);
  const server = await startServer({
    name: `scale-${spec.id}`,
    command,
    args,
    pinned: false,
    healthPath: '/readyz',
    ...(options.healProfileDir === undefined ? {} : { env: { CPU_PROF_DIR: options.healProfileDir } }),
    port: spec.port,
    startTimeoutMs: readyTimeoutMs,
  });
  children.add(server.child);
  server.child.on('exit', () => children.delete(server.child));
  return server;
}

/** Runs the loader processes (each on the loader cores) and sums their figures. */
async function runLoaders(tasks: LoaderTask[], cores: string): Promise<LoaderFigures & { perLoader: LoaderFigures[] }> {
  const perLoader = await Promise.all(
    tasks.map(
      (task) =>
        new Promise<LoaderFigures>((resolve, reject) => {
          const [command, args] = pinnedTo(cores, [process.execPath, '--import', 'tsx', 'bench/scale-loader.ts', JSON.stringify(task)]);
          const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
          children.add(child);
          child.on('exit', () => children.delete(child));
          let out = '';
          child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
          child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as LoaderFigures) : reject(new Error(`loader exited with ${code}`))));
        }),
    ),
  );
  const sum = (pick: (f: LoaderFigures) => number) => perLoader.reduce((total, f) => total + pick(f), 0);
  const colds = perLoader.map((f) => f.coldMs).filter((ms): ms is number => ms !== null);
  return {
    done: sum((f) => f.done),
    errors: sum((f) => f.errors),
    skipped: sum((f) => f.skipped),
    elapsedMs: Math.max(...perLoader.map((f) => f.elapsedMs)),
    coldMs: colds.length > 0 ? Math.max(...colds) : null,
    // Each loader's percentile; the worst loader's is what the peers gave their slowest client.
    p50Ms: Math.max(...perLoader.map((f) => f.p50Ms)),
    p99Ms: Math.max(...perLoader.map((f) => f.p99Ms)),
    maxMs: Math.max(...perLoader.map((f) => f.maxMs)),
    perLoader,
  };
}

/** Splits [from, to) into `parts` ranges. */
function ranges(from: number, to: number, parts: number): [number, number][] {
  const size = Math.ceil((to - from) / parts);
  return Array.from({ length: parts }, (_, k) => [from + k * size, Math.min(to, from + (k + 1) * size)] as [number, number]).filter(([a, b]) => b > a);
}

async function totalListed(url: string): Promise<number> {
  const body = await getJson<{ services: { instances: number }[] }>(`${url}/v1/services`);
  return body.services.reduce((sum, service) => sum + service.instances, 0);
}

/** The V8 heap a peer uses now, in MB, from its /metrics (prom-client's `nodejs_heap_size_used_bytes`). */
async function heapUsedMb(url: string): Promise<number> {
  return (await heapFigures(url)).usedMb;
}

/** A peer's V8 heap now, from prom-client's `nodejs_heap_size_total_bytes`, `nodejs_heap_size_used_bytes` and the new space's `nodejs_heap_space_size_total_bytes`. */
async function heapFigures(url: string): Promise<HeapFigures> {
  const response = await fetch(`${url}/metrics`);
  const rows = (await response.text()).split('\n');
  const mb = (prefix: string) => {
    const line = rows.find((row) => row.startsWith(prefix));
    if (!line) throw new Error(`${url}/metrics has no ${prefix.trim()}`);
    return round(Number(line.slice(prefix.length).trim().split(' ')[0]) / 1_048_576, 1);
  };
  return {
    committedMb: mb('nodejs_heap_size_total_bytes '),
    usedMb: mb('nodejs_heap_size_used_bytes '),
    youngMb: mb('nodejs_heap_space_size_total_bytes{space="new"} '),
  };
}

/**
 * Has `peer` (started with `--heapsnapshot-signal=SIGUSR2`) write a heap snapshot into `dir`
 * and waits until it is written (its size steady and the peer answering again; at most 120 s).
 * Prints the file's name.
 */
async function heapSnapshot(peer: ServerProcess, dir: string, instances: number): Promise<void> {
  const before = new Set(readdirSync(dir));
  process.kill(peer.pid, 'SIGUSR2');
  const deadline = performance.now() + 120_000;
  let file: string | undefined;
  let size = -1;
  while (performance.now() < deadline) {
    await sleep(1_000);
    file ??= readdirSync(dir).find((name) => !before.has(name) && name.endsWith('.heapsnapshot'));
    if (file === undefined) continue;
    const now = statSync(join(dir, file)).size;
    if (now === size && now > 0 && (await fetch(`${peer.url}/readyz`).then((answer) => answer.ok).catch(() => false))) break;
    size = now;
  }
  progress(`cluster: ${instances} instances, heap snapshot of ${peer.name}: ${file === undefined ? 'none written' : join(dir, file)}`);
}

/** Polls (every 100 ms, bounded) until the peer lists `count` instances; ms taken, or NaN. */
async function untilListed(url: string, count: number, maxMs: number): Promise<number> {
  const startedMs = performance.now();
  while (performance.now() - startedMs < maxMs) {
    try {
      if ((await totalListed(url)) >= count) return performance.now() - startedMs;
    } catch {
      // not ready yet: it answers 503 while it catches up
    }
    await sleep(100);
  }
  return Number.NaN;
}

export async function benchScale(options: ScaleOptions): Promise<ScaleResult> {
  const startedMs = Date.now();
  const left = () => options.budgetMs - (Date.now() - startedMs);
  const { peerCores, loaderCores } = coreLayout(options.cores, options.peers);
  const loaders = Math.max(1, Math.min(MAX_LOADERS, coreCount(loaderCores)));
  const layout = { peerCores, loaderCores, loaders };
  progress(`scale: ${options.instances} instances, ${options.cores} cores: peers on ${peerCores.join(' / ')}, ${loaders} loaders on ${loaderCores}; budget ${Math.round(options.budgetMs / 1_000)} s`);
  const specs: PeerSpec[] = [];
  for (let k = 0; k < Math.max(2, options.peers); k++) specs.push({ id: `peer-${k + 1}`, port: await freePort() });
  const started: ServerProcess[] = [];
  const stopAll = async () => {
    for (const server of started.splice(0)) await server.stop();
  };
  const register = (urls: string[], from: number, to: number, coldCount?: number) =>
    runLoaders(
      ranges(from, to, loaders).map(([a, b]) => ({ mode: 'register', urls, from: a, to: b, services: options.services, inFlight: IN_FLIGHT_PER_LOADER, maxMs: Math.max(10_000, left() - 30_000), coldCount: coldCount && Math.ceil(coldCount / loaders) })),
      loaderCores,
    );
  let onePeer: ScaleResult['onePeer'] = { skipped: 'not run' };
  let joined: ScaleResult['join'] = { skipped: 'not run' };
  let cluster: ScaleResult['cluster'] = { skipped: 'not run' };
  try {
    // 1. One peer.
    const [first, second] = specs as [PeerSpec, PeerSpec];
    const peer = await startScalePeer(first, [first], peerCores[0]!, 30_000, options);
    started.push(peer);
    await sleep(SETTLE_MS);
    const idleRssMb = round(peer.rssMb(), 1);
    const points: { instances: number; rssMb: number; heapUsedMb: number }[] = [];
    let loaded = 0;
    let registerMs = 0;
    let coldMs: number | null = null;
    let errors = 0;
    for (const target of [Math.round(options.instances / 10), Math.round(options.instances / 2), options.instances]) {
      const run = await register([peer.url], loaded, target, loaded === 0 ? Math.min(COLD_COUNT, target) : undefined);
      registerMs += run.elapsedMs;
      errors += run.errors;
      if (loaded === 0) coldMs = run.coldMs;
      loaded += run.done;
      if (run.done !== target - (loaded - run.done)) throw new Error(`registered ${run.done} of ${target - (loaded - run.done)} (${run.errors} errors)`);
      await sleep(SETTLE_MS);
      points.push({ instances: loaded, rssMb: round(peer.rssMb(), 1), heapUsedMb: round(await heapUsedMb(peer.url), 1) });
      progress(`one peer: ${loaded} instances, RSS ${points.at(-1)!.rssMb} MB (idle ${idleRssMb} MB), heap used ${points.at(-1)!.heapUsedMb} MB`);
    }
    const fit = linearFit(points.map((point) => [point.instances / 10_000, point.rssMb]));
    const heapFit = linearFit(points.map((point) => [point.instances / 10_000, point.heapUsedMb]));
    await sleep(options.idleSeconds * 1_000);
    const settledRssMb = round(peer.rssMb(), 1);
    onePeer = {
      idleRssMb,
      points,
      slopeBytesPerInstance: Math.round((fit.mbPer10k * 1_048_576) / 10_000),
      heapSlopeBytesPerInstance: Math.round((heapFit.mbPer10k * 1_048_576) / 10_000),
      aboveIdleBytesPerInstance: Math.round(((points.at(-1)!.rssMb - idleRssMb) * 1_048_576) / options.instances),
      rSquared: fit.rSquared,
      settledRssMb,
      settledAboveIdleBytesPerInstance: Math.round(((settledRssMb - idleRssMb) * 1_048_576) / options.instances),
      registerPerSecond: Math.round((options.instances / registerMs) * 1_000),
      coldRegisterPerSecond: coldMs === null ? null : Math.round((Math.min(COLD_COUNT, options.instances) / coldMs) * 1_000),
      errors,
    };
    progress(`one peer: ${onePeer.slopeBytesPerInstance} B per instance (slope; heap ${onePeer.heapSlopeBytesPerInstance} B), ${onePeer.aboveIdleBytesPerInstance} above idle; register ${onePeer.registerPerSecond}/s (cold ${onePeer.coldRegisterPerSecond}/s)`);

    // 2. A new peer joins.
    const joinEstimateMs = (options.instances / 20_000) * 1_000 + 15_000;
    if (!options.withJoin) joined = { skipped: '--no-join' };
    else if (joinEstimateMs > left()) joined = { skipped: `needs about ${Math.round(joinEstimateMs / 1_000)} s, ${Math.round(left() / 1_000)} s left` };
    else {
      const cpuBeforeMs = totalCpuMsOf(peer.pid);
      const joinStartedMs = performance.now();
      const newcomer = await startScalePeer(second, [first, second], peerCores[1]!, Math.max(30_000, left() - 20_000), options);
      started.push(newcomer);
      const readyMs = performance.now() - joinStartedMs;
      const listedMs = await untilListed(newcomer.url, options.instances, Math.max(10_000, left() - 15_000));
      joined = {
        readyMs: Math.round(readyMs),
        allListedMs: Math.round(readyMs + listedMs),
        newPeerRssMb: round(newcomer.rssMb(), 1),
        servingPeerCpuSeconds: round((totalCpuMsOf(peer.pid) - cpuBeforeMs) / 1_000, 2),
        newPeerCpuSeconds: round(totalCpuMsOf(newcomer.pid) / 1_000, 2),
      };
      progress(`join: ready after ${joined.readyMs} ms, every instance listed after ${joined.allListedMs} ms; new peer RSS ${joined.newPeerRssMb} MB; the serving peer spent ${joined.servingPeerCpuSeconds} CPU-s, the new peer ${joined.newPeerCpuSeconds} CPU-s`);
    }
    await stopAll();

    // 3. Five peers (`--peers`) with heartbeats.
    // Registering over five peers (each applies every record) at 15,000 a second or more, two
    // steps of heartbeats, then at least 20 s of heartbeats.
    const clusterEstimateMs = (options.instances / 15_000) * 1_000 + 50_000 + 2 * (STEP_HEARTBEAT_MS + 5_000);
    if (!options.withCluster) cluster = { skipped: '--no-cluster' };
    else if (clusterEstimateMs > left()) cluster = { skipped: `needs about ${Math.round(clusterEstimateMs / 1_000)} s, ${Math.round(left() / 1_000)} s left` };
    // `--peers=1`: a lone peer with every instance heartbeating.
    else cluster = await heartbeatingCluster(options, specs.slice(0, options.peers), layout, started, left);
  } finally {
    await stopAll();
  }
  const result: ScaleResult = {
    options: {
      instances: options.instances,
      cores: options.cores,
      services: options.services,
      peers: options.peers,
      heartbeatSeconds: options.heartbeatSeconds,
      budgetMs: options.budgetMs,
      idleSeconds: options.idleSeconds,
      nodeFlags: options.nodeFlags,
      ...(options.listingCacheBytes === undefined ? {} : { listingCacheBytes: options.listingCacheBytes }),
    },
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version },
    layout,
    startedAt: new Date(startedMs).toISOString(),
    durationSeconds: Math.round((Date.now() - startedMs) / 1_000),
    onePeer,
    join: joined,
    cluster,
  };
  return result;
}

async function heartbeatingCluster(
  options: ScaleOptions,
  specs: PeerSpec[],
  layout: ScaleResult['layout'],
  started: ServerProcess[],
  left: () => number,
): Promise<Cluster> {
  // Fresh peers (new ports: the first phase's may linger in TIME_WAIT), every one seeded with all.
  const fresh: PeerSpec[] = [];
  for (const spec of specs) fresh.push({ id: spec.id, port: await freePort() });
  const peers = await Promise.all(fresh.map((spec, k) => startScalePeer(spec, fresh, layout.peerCores[k]!, 60_000, options)));
  started.push(...peers);
  const urls = peers.map((peer) => peer.url);
  await sleep(SETTLE_MS);
  const idleRssMb = peers.map((peer) => round(peer.rssMb(), 1));
  /** Every instance of 0 to `count` heartbeating on its own peer once every `heartbeatSeconds`, for `durationMs`. */
  const heartbeat = (count: number, durationMs: number) =>
    runLoaders(
      ranges(0, count, layout.loaders).map(([a, b]) => ({
        mode: 'heartbeat',
        urls,
        from: a,
        to: b,
        services: options.services,
        inFlight: 1_024,
        maxMs: durationMs + 5_000,
        ratePerSecond: (b - a) / options.heartbeatSeconds,
        durationMs,
      })),
      layout.loaderCores,
    );
  // RSS at N/10, N/2 and N, each after the instances registered so far heartbeat a while, so
  // that the slope through them leaves out what a loaded peer holds whatever its instance count
  // (its young generation, grown for the load, and the idle peer's own).
  const points: ClusterPoint[] = [];
  let loaded = 0;
  let registerMs = 0;
  let allListedMs = 0;
  let beats: Awaited<ReturnType<typeof heartbeat>> | undefined;
  let heartbeatMs = STEP_HEARTBEAT_MS;
  for (const target of [Math.round(options.instances / 10), Math.round(options.instances / 2), options.instances]) {
    const loadStartedMs = performance.now();
    const load = await runLoaders(
      ranges(loaded, target, layout.loaders).map(([a, b]) => ({ mode: 'register', urls, from: a, to: b, services: options.services, inFlight: IN_FLIGHT_PER_LOADER, maxMs: Math.max(10_000, left() - 60_000) })),
      layout.loaderCores,
    );
    registerMs += performance.now() - loadStartedMs;
    if (load.done !== target - loaded) throw new Error(`cluster: registered ${loaded + load.done} of ${target} (${load.errors} errors)`);
    loaded = target;
    const listed = await Promise.all(urls.map((url) => untilListed(url, loaded, Math.max(10_000, left() - 40_000))));
    allListedMs = Math.round(Math.max(...listed));
    if (loaded === options.instances) heartbeatMs = Math.max(10_000, Math.min(60_000, left() - 20_000 - (options.withHeal ? HEAL_RESERVE_MS : 0)));
    beats = await heartbeat(loaded, heartbeatMs);
    const rssMb = peers.map((peer) => round(peer.rssMb(), 1));
    const heap = await Promise.all(urls.map(heapFigures));
    points.push({ instances: loaded, rssMb, heap });
    progress(
      `cluster: ${loaded} instances heartbeating ${Math.round(heartbeatMs / 1_000)} s, RSS ${rssMb.join(', ')} MB (idle ${idleRssMb.join(', ')} MB); ` +
        `heap committed ${heap.map((h) => h.committedMb).join(', ')}, in use ${heap.map((h) => h.usedMb).join(', ')}, young ${heap.map((h) => h.youngMb).join(', ')} MB`,
    );
    if (options.heapSnapshotDir !== undefined) await heapSnapshot(peers[0]!, options.heapSnapshotDir, loaded);
  }
  const registerSeconds = round(registerMs / 1_000);
  progress(`cluster: ${options.instances} registered over ${peers.length} peers in ${registerSeconds} s, listed on every peer ${allListedMs} ms after`);
  const slopeOf = (value: (point: ClusterPoint, k: number) => number) =>
    peers.map((_, k) => Math.round((linearFit(points.map((point) => [point.instances / 10_000, value(point, k)])).mbPer10k * 1_048_576) / 10_000));
  const figures: Cluster = {
    peers: peers.length,
    registerSeconds,
    allListedMs,
    heartbeatsPerSecond: Math.round(beats!.done / (heartbeatMs / 1_000)),
    heartbeatSeconds: round(heartbeatMs / 1_000),
    p50Ms: beats!.p50Ms,
    p99Ms: beats!.p99Ms,
    maxMs: beats!.maxMs,
    errors: beats!.errors,
    skippedBeats: beats!.skipped,
    rssMb: points.at(-1)!.rssMb,
    idleRssMb,
    points,
    slopeBytesPerInstance: slopeOf((point, k) => point.rssMb[k]!),
    heapSlopes: {
      committed: slopeOf((point, k) => point.heap![k]!.committedMb),
      used: slopeOf((point, k) => point.heap![k]!.usedMb),
      young: slopeOf((point, k) => point.heap![k]!.youngMb),
    },
  };
  progress(`cluster: ${figures.heartbeatsPerSecond} heartbeats/s for ${figures.heartbeatSeconds} s: p50 ${figures.p50Ms} / p99 ${figures.p99Ms} / max ${figures.maxMs} ms (${figures.errors} errors); RSS ${figures.rssMb.join(', ')} MB`);
  if (!options.withHeal) figures.heal = { skipped: '--no-heal' };
  else if (peers.length < 2) figures.heal = { skipped: 'one peer' };
  else if (left() < HEAL_RESERVE_MS) figures.heal = { skipped: `needs about ${HEAL_RESERVE_MS / 1_000} s, ${Math.round(left() / 1_000)} s left` };
  else figures.heal = await healAfterPause(peers, options, layout, left);
  return figures;
}

/** How often the heal step reads every peer's digest (`timeToAgree`). */
const AGREE_POLL_MS = 50;

/**
 * Stops the last peer (SIGSTOP, the pid this script started) for `PAUSE_MS` while the others
 * register 1% more instances (at least 1,000), continues it and times the heal. The peer is
 * always continued, whatever fails.
 */
async function healAfterPause(peers: ServerProcess[], options: ScaleOptions, layout: ScaleResult['layout'], left: () => number): Promise<Heal> {
  const paused = peers.at(-1)!;
  const others = peers.slice(0, -1).map((peer) => peer.url);
  const extra = Math.max(1_000, Math.round(options.instances / 100));
  // The scale cluster has no secret: the peer API's digest answers an observer.
  const digestPools = peers.map((peer) => pool(peer.url, 2));
  try {
    if (Number.isNaN(await timeToAgree(digestPools, 30_000, AGREE_POLL_MS))) throw new Error('heal: the peers did not agree before the pause');
    const skippedBefore = await metricFigure(paused.url, 'registry_peer_calls_abandoned_total');
    if (options.healProfileDir !== undefined) {
      process.kill(paused.pid, 'SIGUSR2');
      await sleep(300);
    }
    process.kill(paused.pid, 'SIGSTOP');
    const pausedAtMs = performance.now();
    try {
      const load = await runLoaders(
        ranges(options.instances, options.instances + extra, layout.loaders).map(([a, b]) => ({ mode: 'register', urls: others, from: a, to: b, services: options.services, inFlight: IN_FLIGHT_PER_LOADER, maxMs: PAUSE_MS })),
        layout.loaderCores,
      );
      if (load.done !== extra) throw new Error(`heal: registered ${load.done} of ${extra} during the pause (${load.errors} errors)`);
      await sleep(Math.max(0, PAUSE_MS - (performance.now() - pausedAtMs)));
    } finally {
      process.kill(paused.pid, 'SIGCONT');
    }
    const continuedAtEpochMs = Date.now();
    const pausedSeconds = round((performance.now() - pausedAtMs) / 1_000);
    const answered = timeToAnswer(paused.url).catch(() => Number.NaN);
    const listed = untilListed(paused.url, options.instances + extra, Math.max(10_000, left() - 10_000));
    const agreedMs = await timeToAgree(digestPools, Math.max(10_000, left() - 10_000), AGREE_POLL_MS);
    if (options.healProfileDir !== undefined) {
      await sleep(Math.max(0, 4_000 - (Date.now() - continuedAtEpochMs)));
      process.kill(paused.pid, 'SIGUSR2');
      await profileWritten(join(options.healProfileDir, `${paused.pid}-1.cpuprofile`), 30_000);
    }
    const heal: Heal = {
      pausedSeconds,
      registeredMeanwhile: extra,
      agreedMs: Math.round(agreedMs),
      pausedPeerListedMs: Math.round(await listed),
      pausedPeerAnsweredMs: Math.round(await answered),
      // Read for up to 5 s: a peer may log it after the digests agreed (the paused peer's own
      // anti-entropy round can bring it the writes first). At warn the peers log no such line.
      seenBackMs: await seenBackBy(
        peers.slice(0, -1).map((peer) => peer.logFile),
        peerIdOf(paused),
        continuedAtEpochMs,
        ['info', 'debug', 'trace'].includes(options.peerLogLevel) ? 5_000 : 0,
      ),
    };
    const skippedAfter = await metricFigure(paused.url, 'registry_peer_calls_abandoned_total');
    if (skippedBefore !== null && skippedAfter !== null) heal.skippedCalls = skippedAfter - skippedBefore;
    const seenBack = heal.seenBackMs!.map((ms) => ms ?? '-').join(' / ');
    progress(
      `heal: ${paused.name} paused ${pausedSeconds} s while ${extra} instances registered on the others; it answered ${heal.pausedPeerAnsweredMs} ms after it went on, ` +
        `the others logged it back after ${seenBack} ms (${heal.skippedCalls ?? '?'} abandoned calls skipped), every digest agreed after ${heal.agreedMs} ms, it listed every instance after ${heal.pausedPeerListedMs} ms`,
    );
    return heal;
  } finally {
    await Promise.all(digestPools.map((target) => target.close()));
  }
}

/** The peer id a scale peer runs with (its process is named `scale-<id>`, see `startScalePeer`). */
function peerIdOf(peer: ServerProcess): string {
  return peer.name.replace(/^scale-/, '');
}


/**
 * The peers' Node flags from `--node-flags` (whitespace between flags): `PEER_NODE_FLAGS` when
 * not given, none when empty. Each must be a flag (`--...`): anything else would be taken for
 * the script. Pure.
 */
export function nodeFlagsOf(text: string | undefined): readonly string[] {
  if (text === undefined) return PEER_NODE_FLAGS;
  const flags = text.split(/\s+/).filter((flag) => flag !== '');
  const wrong = flags.find((flag) => !flag.startsWith('--'));
  if (wrong !== undefined) throw new Error(`--node-flags: ${JSON.stringify(wrong)} is not a Node flag (--name or --name=value)`);
  return flags;
}

/** `--heal-profile=DIR`, made absolute (the peers run from the repository's root) and created. */
function healProfileDirOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const dir = resolve(text);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** `--listing-cache-bytes`: absent, or a whole number of bytes (0 switches the cache off). Pure. */
export function listingCacheBytesOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const bytes = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(bytes) || bytes < 0) throw new Error(`--listing-cache-bytes: ${JSON.stringify(text)} is not a whole number of bytes`);
  return bytes;
}

function argument(name: string): string | undefined {
  return process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** Reads the options from the command line (`--instances=N --cores=C ...`). */
export function scaleOptionsFromArgs(): ScaleOptions {
  const number = (name: string, fallback: number) => {
    const value = Number(argument(name) ?? fallback);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
    return value;
  };
  return {
    instances: number('instances', 100_000),
    cores: Math.min(number('cores', cpus().length), cpus().length),
    services: number('services', 1_000),
    peers: number('peers', 5),
    heartbeatSeconds: number('heartbeat-s', 30),
    budgetMs: number('budget-s', 600) * 1_000,
    withCluster: !process.argv.includes('--no-cluster'),
    withJoin: !process.argv.includes('--no-join'),
    withHeal: !process.argv.includes('--no-heal'),
    idleSeconds: number('idle-s', 20),
    main: argument('main') ?? 'dist/main.js',
    nodeFlags: nodeFlagsOf(argument('node-flags')),
    listingCacheBytes: listingCacheBytesOf(argument('listing-cache-bytes')),
    heapSnapshotDir: argument('heap-snapshots'),
    healProfileDir: healProfileDirOf(argument('heal-profile')),
    peerLogLevel: argument('peer-log-level') ?? 'warn',
    outDir: argument('out'),
  };
}

/** Runs the scale benchmark with the command line's options and writes its figures. */
export async function runScale(): Promise<ScaleResult> {
  const options = scaleOptionsFromArgs();
  const result = await benchScale(options);
  const markdown = renderScaleMarkdown(result);
  writeFileSync(new URL('./scale-results.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
  if (options.outDir) {
    mkdirSync(options.outDir, { recursive: true });
    writeFileSync(join(options.outDir, 'scale.json'), `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(join(options.outDir, 'scale.md'), `${markdown}\n`);
  }
  console.log(markdown);
  return result;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      for (const child of children) child.kill('SIGKILL');
      process.exit(1);
    });
  }
  await runScale();
  process.exit(0);
}
