/**
 * How long a fresh peer takes to hold every instance of a serving peer, streamed
 * (`POST /v1/peer/snapshot-stream`) vs paged (`snapshot`, what a peer of the previous version
 * serves), and what each costs in CPU on both sides, in one run. Issue 36's target: 1,000,000
 * instances in at most 15 s, at most 10 CPU-s on the serving peer.
 *
 * Three processes on 127.0.0.1: this one only orchestrates; a serving peer (its peer API over
 * real HTTP, N instances registered in it, not started: no reaper, no probes, nothing else to
 * do); and, for each mode in turn, a fresh joining peer that runs its real start-up
 * (`RegistryNode.start`: the pull, then one anti-entropy round) against it. Wall time is the
 * joining peer's `start()` until it is ready holding all N; CPU-s are `process.cpuUsage()`
 * deltas of each process over that time (user + system). The serving process also reports the
 * longest event-loop delay it saw meanwhile (what a heartbeat or probe would have waited). The
 * serving peer collects its garbage once filled, so that the first mode does not pay for it;
 * run modes in either order (`--modes=pages,stream`) to see what order still costs.
 *
 *   npm run build && npx tsx bench/snapshot-join.ts [--instances=100000] [--modes=stream,pages]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { systemClock } from '../src/clock/clock.js';
import { seededRng } from '../src/clock/rng.js';
import { resolveConfig } from '../src/config/load.js';
import { buildServer } from '../src/http/server.js';
import { silentLogger } from '../src/log/logger.js';
import { RegistryNode } from '../src/node.js';
import { HttpTransport } from '../src/transport/http-transport.js';
import type { PeerTransport } from '../src/transport/transport.js';
import { instance } from '../test/support/cluster.js';
import { progress, round, table, writeResult } from './lib.js';

const argument = (name: string, fallback: string): string =>
  process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;

const INSTANCES = Number(argument('instances', '100000'));
const MODES = argument('modes', 'stream,pages').split(',') as Mode[];
/** Each step (the serving peer's fill, each join) gives up after this long: on a loaded machine 1,000,000 paged took over 10 min. */
const STEP_LIMIT_MS = 30 * 60_000;
/** Heap for the peers: a registry of 1,000,000 instances holds about 1.5 GB. */
const CHILD_HEAP_MB = 8_192;

type Mode = 'stream' | 'pages';
type CpuSeconds = number;

interface JoinReport {
  wallMs: number;
  cpuS: CpuSeconds;
  records: number;
  held: number;
}

const cpuSeconds = (usage: NodeJS.CpuUsage): CpuSeconds => (usage.user + usage.system) / 1e6;

function config(selfId: string, peers: Array<{ id: string; url: string }>) {
  return resolveConfig({ cluster: { name: 'bench' }, peers: peers.map((peer, i) => ({ ...peer, region: 'local', zone: `z${i}` })) }, {}, { id: selfId });
}

/** The serving peer: fills its registry, listens, then answers `cpu` messages with its figures since the last one. */
async function serve(): Promise<void> {
  const cfg = config('peer-a', [{ id: 'peer-a', url: 'http://127.0.0.1:1' }]);
  const transport = new HttpTransport({ connectionsPerPeer: 4, connectTimeoutMs: 5_000, selfRegion: 'local', compressMinBytes: cfg.cluster.compressMinBytes, selfId: 'peer-a' });
  const node = new RegistryNode({ clock: systemClock, rng: seededRng(1), logger: silentLogger, transport }, cfg);
  for (let i = 0; i < INSTANCES; i++) {
    node.registry.register(
      instance(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:8080`, {
        service: `svc-${i % 1_000}`,
        leaseDurationMs: 600_000,
        data: { host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, port: 8080, securePort: null, status: 'UP', weight: 1, zone: 'z1', metadata: { version: '1.4.2', team: `team-${i % 17}` } },
      }),
    );
  }
  // Collect the garbage of the fill now, or the first join measured pays for it (a full
  // collection of a heap of several GB on the serving side).
  (globalThis as { gc?: () => void }).gc?.();
  const app = await buildServer({ node });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let since = process.cpuUsage();
  process.on('message', (message: string) => {
    if (message === 'cpu') {
      const usage = process.cpuUsage(since);
      since = process.cpuUsage();
      process.send!({ cpuS: cpuSeconds(usage), loopMaxMs: loop.max / 1e6 });
      loop.reset();
    } else if (message === 'exit') {
      void app.close().finally(() => process.exit(0));
    }
  });
  process.send!({ url: `http://127.0.0.1:${port}`, size: node.store.size });
}

/** A joining peer: one start-up against the serving peer, through the stream or the pages. */
async function join(url: string, mode: Mode): Promise<void> {
  const cfg = config('peer-b', [
    { id: 'peer-b', url: 'http://127.0.0.1:1' },
    { id: 'peer-a', url },
  ]);
  const http = new HttpTransport({ connectionsPerPeer: 4, connectTimeoutMs: 5_000, selfRegion: 'local', compressMinBytes: cfg.cluster.compressMinBytes, selfId: 'peer-b' });
  // Pages: the transport of a peer that cannot stream (the same calls a joining peer makes to an older peer).
  const transport: PeerTransport = mode === 'stream' ? http : { call: (peer, method, body, options) => http.call(peer, method, body, options), peerBytes: http.peerBytes };
  const node = new RegistryNode({ clock: systemClock, rng: seededRng(2), logger: silentLogger, transport }, cfg);
  // The core's timers are unref'd (a peer lives on its HTTP server): hold the process while it
  // syncs, retry waits included.
  const alive = setInterval(() => undefined, 1_000);
  const cpu = process.cpuUsage();
  const startedMs = performance.now();
  await node.start();
  const wallMs = performance.now() - startedMs;
  clearInterval(alive);
  const report: JoinReport = { wallMs, cpuS: cpuSeconds(process.cpuUsage(cpu)), records: node.bootstrapResult?.records ?? 0, held: node.store.size };
  await node.stop();
  await http.close();
  process.send!(report);
  process.exit(0);
}

function child(args: string[]): ChildProcess {
  return fork(fileURLToPath(import.meta.url), args, {
    execArgv: [...process.execArgv, `--max-old-space-size=${CHILD_HEAP_MB}`, '--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

function nextMessage<T>(process: ChildProcess, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      process.kill();
      reject(new Error(`${what}: no answer within ${STEP_LIMIT_MS} ms`));
    }, STEP_LIMIT_MS);
    process.once('message', (message) => {
      clearTimeout(timer);
      resolve(message as T);
    });
    process.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what}: process exited (${code})`));
    });
  });
}

async function orchestrate(): Promise<void> {
  progress(`serving peer: registering ${INSTANCES} instances`);
  const server = child([`--role=serve`, `--instances=${INSTANCES}`]);
  const rows: Record<string, string | number>[] = [];
  const results: Record<string, unknown> = {};
  try {
    const { url, size } = await nextMessage<{ url: string; size: number }>(server, 'serving peer');
    progress(`serving peer at ${url} holds ${size}`);
    for (const mode of MODES) {
      server.send('cpu');
      await nextMessage(server, 'serving peer cpu');
      progress(`joining by ${mode}`);
      const joiner = child([`--role=join`, `--mode=${mode}`, `--url=${url}`, `--instances=${INSTANCES}`]);
      const report = await nextMessage<JoinReport>(joiner, `join by ${mode}`);
      server.send('cpu');
      const serving = await nextMessage<{ cpuS: number; loopMaxMs: number }>(server, 'serving peer cpu');
      if (report.held !== INSTANCES) throw new Error(`join by ${mode} holds ${report.held} of ${INSTANCES}`);
      results[mode] = { ...report, servingCpuS: serving.cpuS, servingLoopMaxMs: serving.loopMaxMs };
      const row = {
        mode,
        instances: INSTANCES,
        'catch-up s': round(report.wallMs / 1000, 2),
        'serving CPU-s': round(serving.cpuS, 2),
        'joining CPU-s': round(report.cpuS, 2),
        'both CPU-s': round(serving.cpuS + report.cpuS, 2),
        'serving loop max delay ms': round(serving.loopMaxMs, 0),
      };
      rows.push(row);
      progress(JSON.stringify(row));
    }
  } finally {
    server.send('exit');
  }
  const stream = results.stream as JoinReport | undefined;
  const pages = results.pages as JoinReport | undefined;
  console.log(table(rows));
  if (stream && pages) console.log(`\npages / stream catch-up time: ${round(pages.wallMs / stream.wallMs, 2)}x`);
  console.log(`written to ${writeResult(`snapshot-join-${INSTANCES}`, { instances: INSTANCES, results })}`);
}

const role = argument('role', 'orchestrate');
if (role === 'serve') await serve();
else if (role === 'join') await join(argument('url', ''), argument('mode', 'stream') as Mode);
else await orchestrate();
