// Durability benchmarks (issue 7), on the compiled code: `npm run bench:durability`.
//
// 1. Restart: a data dir holding 100,000 instances (5 metadata keys each), once as a log only
//    and once as a snapshot; time from spawning `node dist/main.js` to the first /readyz 200.
//    Target: under 2 s. Reference in the same run: the same start with an empty data dir.
// 2. Write throughput: registers of new instances over HTTP on 127.0.0.1 at a fixed
//    concurrency, in-memory peer vs `--sync-policy interval` (and `always`, for information).
//    Target: interval >= 0.8 x in-memory. Each round measures every peer back to back, in an
//    order that rotates, and the ratio is the median of the rounds' ratios, so that the drift of
//    a busy machine cancels out. The peer's CPU time per register (from /proc) is shown too:
//    it is steadier than throughput when the load generator shares the machine.
//
// Every load loop is bounded in count and time; only 127.0.0.1 is used; only the processes
// started here are stopped, by pid. Results: a table on stdout, JSON in bench/out/.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { systemClock } from '../dist/clock/clock.js';
import { seededRng } from '../dist/clock/rng.js';
import { resolveConfig } from '../dist/config/load.js';
import { silentLogger } from '../dist/log/logger.js';
import { RegistryNode } from '../dist/node.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const mainScript = join(root, 'dist/main.js');
const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 100_000);
const RESTARTS = 3;
const WRITES_PER_RUN = Number(process.env.BENCH_WRITES ?? 15_000);
const WRITE_RUN_MAX_MS = 20_000;
const CONCURRENCY = 16;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
// `interval` is the target; `always` is shown for information. BENCH_POLICIES=never,interval,always to compare.
const POLICIES = (process.env.BENCH_POLICIES ?? 'interval,always').split(',');

const work = mkdtempSync(join(tmpdir(), 'registry-bench-'));
const children = new Set();
const log = (message) => process.stdout.write(`${message}\n`);
const CLOCK_TICKS_PER_S = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) a process used so far, in ms; null where /proc is not there. */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return null;
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function metadataFor(i) {
  return { team: `team-${i % 50}`, version: `1.${i % 20}.${i % 7}`, region: 'eu-west-1', build: String(100_000 + i), owner: 'platform' };
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts a peer; resolves with its pid, URL and the ms from spawn to the first /readyz 200. */
async function startPeer(args) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const startedAt = performance.now();
  const child = spawn(process.execPath, [mainScript, '--host', '127.0.0.1', '--port', String(port), '--log-level', 'warn', ...args], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`peer exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error('peer not ready within 30 s');
    try {
      const response = await fetch(`${url}/readyz`);
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const readyMs = performance.now() - startedAt;
  return {
    url,
    pid: child.pid,
    readyMs,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      children.delete(child);
    },
  };
}

/** Fills a data dir through the real write path (registry -> log), optionally with a snapshot. */
async function fillDataDir(dataDir, withSnapshot) {
  const config = resolveConfig({ dataDir, storage: { snapshotLogBytes: 1024 ** 3 } }, {}, {});
  const node = new RegistryNode({ clock: systemClock, rng: seededRng(1), logger: silentLogger }, config);
  await node.start();
  for (let i = 0; i < INSTANCES; i++) {
    node.registry.register({
      namespace: 'default',
      service: `svc-${i % 500}`,
      instanceId: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:8080`,
      data: { host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, port: 8080, securePort: null, status: 'UP', weight: 1, zone: 'a', metadata: metadataFor(i) },
      leaseDurationMs: 600_000,
    });
    if (i % 10_000 === 9_999) await node.durability.barrier(0);
  }
  if (withSnapshot) await node.persistence.snapshotNow('benchmark');
  await node.stop();
}

async function restartBenchmark() {
  const results = {};
  const variants = [
    ['empty data dir (reference)', null],
    [`${INSTANCES} instances, log only`, false],
    [`${INSTANCES} instances, snapshot`, true],
  ];
  for (const [name, withSnapshot] of variants) {
    const dataDir = join(work, `restart-${Object.keys(results).length}`);
    if (withSnapshot !== null) {
      const fillStart = performance.now();
      await fillDataDir(dataDir, withSnapshot);
      log(`  filled ${name} in ${Math.round(performance.now() - fillStart)} ms`);
    }
    const times = [];
    for (let i = 0; i < RESTARTS; i++) {
      const peer = await startPeer(['--data-dir', dataDir]);
      if (withSnapshot !== null && i === 0) {
        const listed = await (await fetch(`${peer.url}/v1/services/svc-7`)).json();
        if (listed.instances.length !== INSTANCES / 500) throw new Error(`restored ${listed.instances.length} of svc-7`);
      }
      await peer.stop();
      times.push(peer.readyMs);
      log(`  ${name}: ready in ${Math.round(peer.readyMs)} ms`);
    }
    results[name] = { readyMs: times.map(Math.round), medianMs: Math.round(median(times)) };
  }
  return results;
}

/** Registers `count` new instances at a fixed concurrency; bounded by count and time. */
async function loadRun(url, prefix, count) {
  const pool = new Pool(url, { connections: CONCURRENCY, pipelining: 1 });
  let next = 0;
  let ok = 0;
  let failed = 0;
  const deadline = Date.now() + WRITE_RUN_MAX_MS;
  const startedAt = performance.now();
  const worker = async () => {
    while (next < count && Date.now() < deadline) {
      const i = next++;
      const response = await pool.request({
        method: 'POST',
        path: '/v1/instances',
        headers: { 'content-type': 'application/json' },
        // A long lease: no eviction (itself a write) may happen during the measurement.
        body: JSON.stringify({
          service: `svc-${i % 100}`,
          host: '127.0.0.1',
          port: 1 + (i % 60_000),
          instanceId: `${prefix}-${i}`,
          metadata: metadataFor(i),
          leaseDurationMs: 600_000,
        }),
      });
      await response.body.dump();
      if (response.statusCode === 201) ok += 1;
      else failed += 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - startedAt) / 1000;
  await pool.close();
  if (failed > 0) throw new Error(`${failed} registers failed`);
  return ok / seconds;
}

async function throughputBenchmark() {
  const peers = { 'in-memory': await startPeer([]) };
  for (const policy of POLICIES) {
    peers[policy] = await startPeer(['--data-dir', join(work, `tput-${policy}`), '--sync-policy', policy]);
  }
  const names = Object.keys(peers);
  const rates = Object.fromEntries(names.map((name) => [name, []]));
  const cpuUsPerWrite = Object.fromEntries(names.map((name) => [name, []]));
  const ratios = [];
  for (const peer of Object.values(peers)) await loadRun(peer.url, 'warmup', 2_000);
  for (let round = 0; round < ROUNDS; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    const line = [];
    for (const name of order) {
      const peer = peers[name];
      const cpuBefore = cpuMs(peer.pid);
      const rate = await loadRun(peer.url, `r${round}`, WRITES_PER_RUN);
      const cpuAfter = cpuMs(peer.pid);
      rates[name].push(rate);
      if (cpuBefore !== null && cpuAfter !== null) cpuUsPerWrite[name].push(((cpuAfter - cpuBefore) * 1000) / WRITES_PER_RUN);
      line.push(`${name} ${Math.round(rate)}/s`);
    }
    ratios.push(rates.interval[round] / rates['in-memory'][round]);
    log(`  round ${round + 1}/${ROUNDS}: ${line.join(', ')}; interval/in-memory ${ratios[round].toFixed(2)}`);
  }
  for (const peer of Object.values(peers)) await peer.stop();
  const summary = Object.fromEntries(
    names.map((name) => [
      name,
      {
        perSecond: rates[name].map(Math.round),
        median: Math.round(median(rates[name])),
        peerCpuUsPerRegister: cpuUsPerWrite[name].length ? Math.round(median(cpuUsPerWrite[name])) : null,
      },
    ]),
  );
  return { peers: summary, roundRatios: ratios.map((r) => Number(r.toFixed(3))), ratio: median(ratios) };
}

async function main() {
  log(`durability benchmark: ${INSTANCES} instances, ${WRITES_PER_RUN} registers a run at concurrency ${CONCURRENCY}`);
  log('1. restart time (spawn -> /readyz 200)');
  const restart = await restartBenchmark();
  log('2. write throughput');
  const throughput = await throughputBenchmark();

  const restartTarget = 2_000;
  const { ratio } = throughput;
  const rows = [
    ...Object.entries(restart).map(([name, r]) => [`restart: ${name}`, `${r.medianMs} ms`, name.includes('reference') ? '' : `< ${restartTarget} ms: ${r.medianMs < restartTarget ? 'met' : 'MISSED'}`]),
    ...Object.entries(throughput.peers).map(([name, t]) => [
      `registers/s: ${name}`,
      String(t.median),
      t.peerCpuUsPerRegister === null ? '' : `peer CPU ${t.peerCpuUsPerRegister} us/register`,
    ]),
    ['interval / in-memory (median of rounds)', ratio.toFixed(2), `>= 0.80: ${ratio >= 0.8 ? 'met' : 'MISSED'}`],
  ];
  const width = Math.max(...rows.map((row) => row[0].length));
  log('');
  for (const [what, value, target] of rows) log(`${what.padEnd(width)}  ${value.padStart(9)}  ${target}`);

  const outDir = join(root, 'bench/out');
  mkdirSync(outDir, { recursive: true });
  const result = {
    at: new Date().toISOString(),
    node: process.version,
    instances: INSTANCES,
    writesPerRun: WRITES_PER_RUN,
    concurrency: CONCURRENCY,
    restart,
    throughput,
    intervalToMemoryRatio: Number(ratio.toFixed(3)),
  };
  writeFileSync(join(outDir, 'durability.json'), `${JSON.stringify(result, null, 2)}\n`);
  log(`\nwrote bench/out/durability.json`);
}

try {
  await main();
} finally {
  for (const child of children) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
