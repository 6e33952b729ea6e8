/**
 * What holds a big peer's event loop (issue 36: no work proportional to the registry may run
 * in one piece on the event loop). One peer holding N instances (default 100,000, in services
 * of 1,000, five metadata keys, registered through /v1), a heartbeat to it every 10 ms from a
 * process of its own (bench/read-scale.ts's prober), and, one after the other, the operations
 * that go over the whole registry:
 *
 *   - idle: nothing else (what the machine's load alone does to a heartbeat);
 *   - fullfetch-gzip: a cold Eureka full fetch (`GET /eureka/apps`, JSON, Accept-Encoding gzip);
 *   - fullfetch-plain: the same without gzip (builds the plain parts);
 *   - delta: `GET /eureka/apps/delta` right after the registrations (the window holds all N);
 *   - delta-flood: for `FLOOD_MS`, 16 clients fetching the gzipped delta back to back while 16
 *     more re-register instances with new metadata (every delta request then sees a new store
 *     revision, and the registry keeps its size): how
 *     many deltas were answered, the peer's peak RSS growth (each delta build of N changes
 *     holds its plain bytes while it runs);
 *   - scrape: `GET /metrics`;
 *   - reconcile: `POST /v1/peer/reconcile` for 64 of the 4,096 digest buckets (one pass over
 *     the store finds their records).
 *
 * For each: its wall time, the peer's peak RSS growth meanwhile, and the heartbeats' p50, p99
 * and max. `--before=<path to main.js>` runs the same on another build first (the reference,
 * e.g. /work/main/dist/main.js), in the same run. Run from dist/ (`npm run build` first).
 *   npx tsx bench/loop-stalls.ts [--instances=100000] [--before=/work/main/dist/main.js]
 * Results: bench/out/loop-stalls.json. Every loop is bounded in count and time; 127.0.0.1 only.
 */
import { request } from 'undici';
import { percentile, pool, progress, round, send, sleep, table, writeResult } from './lib.js';
import { startPeer, type ServerProcess } from './processes.js';
import { registerMany, spawnProber } from './read-scale.js';

const PER_SERVICE = 1_000;
const RECONCILE_BUCKETS = 64;
/** How long the delta flood lasts, and how many clients read and write in it. */
const FLOOD_MS = 10_000;
const FLOOD_CLIENTS = 16;
const OPERATION_TIMEOUT_MS = 300_000;

interface Phase {
  peer: string;
  operation: string;
  seconds: number;
  peakRssGrowthMb: number;
  heartbeats: number;
  /** Heartbeats answered other than 200, or not answered (their time is in the figures too). */
  failedHeartbeats: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  bytes: number;
  /** What the operation failed with, if it did (a build that ran out of string length or memory). */
  error?: string;
}

function flag(name: string): string | undefined {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  return arg?.slice(name.length + 3);
}

/**
 * A process of its own that sends a heartbeat every 10 ms until told to stop, then hands back
 * the time of every one but the first, answered 200 or not, and how many were not 200 (a
 * heartbeat that failed while the loop was held counts: read-scale.ts's prober leaves them out).
 */
function startProber(url: string): { ready: Promise<void>; stop(): Promise<{ times: number[]; failed: number }> } {
  const code =
    `const {request}=require('undici');const url=process.argv[1];const times=[];let failed=0;let on=true;process.stdin.on('end',()=>{on=false});process.stdin.resume();` +
    `(async()=>{let first=true;for(let n=0;on&&n<1e6;n++){const t0=performance.now();let ok=false;try{const r=await request(url,{method:'PUT'});await r.body.dump();ok=r.statusCode===200}catch{}` +
    `if(first){first=false;process.stdout.write('ready\\n')}else{times.push(performance.now()-t0);if(!ok)failed++}await new Promise((f)=>setTimeout(f,10))}process.stdout.write(JSON.stringify({times,failed}))})()`;
  const prober = spawnProber(url, code);
  return { ready: prober.ready, stop: async () => JSON.parse((await prober.stop()) || '{"times":[],"failed":0}') as { times: number[]; failed: number } };
}

/** Reads an answer to its end; its size in bytes. */
async function read(url: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}): Promise<number> {
  const response = await request(url, { ...init, bodyTimeout: OPERATION_TIMEOUT_MS, headersTimeout: OPERATION_TIMEOUT_MS });
  let bytes = 0;
  for await (const chunk of response.body) bytes += (chunk as Buffer).length;
  if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}`);
  return bytes;
}

/**
 * `FLOOD_CLIENTS` clients reading the gzipped Eureka delta back to back for `FLOOD_MS` while as
 * many re-register instances with new metadata (bounded in count too); the bytes of every
 * delta answered. Every
 * loop ends with the time, and the last requests are awaited.
 */
async function deltaFlood(url: string): Promise<number> {
  const endMs = performance.now() + FLOOD_MS;
  const writes = pool(url, FLOOD_CLIENTS);
  let bytes = 0;
  let deltas = 0;
  let registered = 0;
  const reader = async () => {
    while (performance.now() < endMs) {
      bytes += await read(`${url}/eureka/apps/delta`, { headers: { accept: 'application/json', 'accept-encoding': 'gzip' } });
      deltas += 1;
    }
  };
  const writer = async (w: number) => {
    for (let n = 0; n < 1_000_000 && performance.now() < endMs; n++) {
      const answer = await send(writes, {
        method: 'POST',
        path: '/v1/instances',
        // An instance the phase before registered (loop-0, i-0000 to i-0999), with new metadata.
        body: { service: 'loop-0', instanceId: `i-${String((w * 61 + n) % PER_SERVICE).padStart(4, '0')}`, host: '10.1.0.1', port: 1, metadata: { flood: `${w}-${n}` }, leaseDurationMs: 600_000 },
      });
      if (answer.status !== 201 && answer.status !== 200) throw new Error(`register answered ${answer.status}`);
      registered += 1;
    }
  };
  try {
    await Promise.all([...Array.from({ length: FLOOD_CLIENTS }, reader), ...Array.from({ length: FLOOD_CLIENTS }, (_, w) => writer(w))]);
  } finally {
    await writes.close();
  }
  progress(`delta flood: ${deltas} deltas answered, ${registered} registrations meanwhile`);
  return bytes;
}

/** Runs `operation` with heartbeats to the peer meanwhile, sampling its RSS. */
async function measure(peer: ServerProcess, label: string, name: string, heartbeatUrl: string, operation: () => Promise<number>): Promise<Phase> {
  const prober = startProber(heartbeatUrl);
  await prober.ready;
  // A few heartbeats before, so that even a short operation has some measured beside it.
  await sleep(300);
  const rssBeforeMb = peer.rssMb();
  let peakMb = rssBeforeMb;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peakMb = Math.max(peakMb, peer.rssMb());
      await sleep(20);
    }
  })();
  const t0 = performance.now();
  let bytes = 0;
  let error: string | undefined;
  try {
    bytes = await operation();
  } catch (failure) {
    error = failure instanceof Error ? failure.message : String(failure);
  }
  const seconds = (performance.now() - t0) / 1_000;
  await sleep(300);
  running = false;
  await sampler;
  const { times: beats, failed } = await prober.stop();
  const phase: Phase = {
    peer: label,
    operation: name,
    seconds: round(seconds, 2),
    peakRssGrowthMb: round(peakMb - rssBeforeMb, 0),
    heartbeats: beats.length,
    failedHeartbeats: failed,
    p50Ms: round(percentile(beats, 0.5), 1),
    p99Ms: round(percentile(beats, 0.99), 1),
    maxMs: round(Math.max(0, ...beats), 1),
    bytes,
    ...(error === undefined ? {} : { error }),
  };
  progress(`${label} ${name}: ${JSON.stringify(phase)}`);
  return phase;
}

async function measurePeer(label: string, main: string | undefined, instances: number): Promise<Phase[]> {
  const peer = await startPeer(`loop-stalls-${label}`, { pinned: false, logLevel: 'warn', ...(main ? { main } : {}) });
  const phases: Phase[] = [];
  try {
    const services = Math.max(1, Math.ceil(instances / PER_SERVICE));
    progress(`${label}: registering ${services * PER_SERVICE} instances in ${services} services`);
    // 100 services at a time: each call has its own time bound (300 s), enough for 100,000.
    for (let from = 0; from < services; from += 100) {
      await registerMany(peer.url, Array.from({ length: Math.min(100, services - from) }, (_, i) => `loop-${from + i}`), PER_SERVICE, 'i');
    }
    const heartbeatUrl = `${peer.url}/v1/services/loop-0/instances/i-0000/heartbeat`;
    const run = (name: string, operation: () => Promise<number>) => measure(peer, label, name, heartbeatUrl, operation).then((phase) => phases.push(phase));
    await run('idle', async () => (await sleep(2_000), 0));
    await run('fullfetch-gzip', () => read(`${peer.url}/eureka/apps`, { headers: { accept: 'application/json', 'accept-encoding': 'gzip' } }));
    await run('fullfetch-plain', () => read(`${peer.url}/eureka/apps`, { headers: { accept: 'application/json' } }));
    await run('delta', () => read(`${peer.url}/eureka/apps/delta`, { headers: { accept: 'application/json', 'accept-encoding': 'gzip' } }));
    await run('delta-flood', () => deltaFlood(peer.url));
    await run('scrape', () => read(`${peer.url}/metrics`));
    const buckets = Array.from({ length: RECONCILE_BUCKETS }, (_, b) => b);
    await run('reconcile', () =>
      read(`${peer.url}/v1/peer/reconcile`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ from: 'bench', buckets, entries: [] }) }),
    );
  } finally {
    await peer.stop();
  }
  return phases;
}

async function main(): Promise<void> {
  const instances = Number(flag('instances') ?? 100_000);
  if (!Number.isInteger(instances) || instances < 1_000 || instances > 2_000_000) throw new Error('--instances: 1,000 to 2,000,000');
  const before = flag('before');
  const phases: Phase[] = [];
  if (before) phases.push(...(await measurePeer('before', before, instances)));
  phases.push(...(await measurePeer('after', undefined, instances)));
  const file = writeResult('loop-stalls', { instances, before: before ?? null, phases });
  console.log(table(phases.map((p) => ({ peer: p.peer, operation: p.operation, 's': p.seconds, 'RSS +MB': p.peakRssGrowthMb, 'hb p50': p.p50Ms, 'hb p99': p.p99Ms, 'hb max': p.maxMs, beats: p.heartbeats, failed: p.failedHeartbeats, bytes: p.error ?? p.bytes }))));
  progress(`written to ${file}`);
}

await main();
