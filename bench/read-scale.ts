/**
 * Reads at scale (issue 16): what a read or a push costs when many readers want the same thing.
 *
 *   1. discover (`GET /v1/services/{s}`) of a 100- and a 1,000-instance service, 16 in flight,
 *      against a bare node:http server sending the very same bytes (the reference, two
 *      processes of it, their mean), with bare fastify sending them too, in rounds of each in
 *      turn (the order reversed every other round); the ratio is the median of the rounds'
 *      ratios, so that a change of the machine's load between rounds weighs on all of them.
 *      The two bare processes' ratio to each other is shown beside it: what noise alone does;
 *   2. Eureka full fetch (`GET /eureka/apps`, JSON) of the whole registry, 1, 8 and 32 at once:
 *      time, the peer's CPU seconds, its peak RSS growth, and heartbeats sent to the same peer
 *      meanwhile (p99, max); the reference is the first, cold fetch (which builds the document);
 *   3. SSE: N subscribers of one 1,000-instance service: time to subscribe all, RSS per
 *      subscriber, and a burst of 100 status changes: from the last write's answer to the
 *      delta naming it on each subscriber (p50, p99, last);
 *   4. cross-peer watch latency at low load: register on peer A, delta on a watcher of peer B.
 *
 * Peers run from dist/ (build first), pinned to one CPU when taskset is there, the load on the
 * others. `--quick`: 10,000 instances, 1,000 subscribers, fewer rounds.
 *   npx tsx bench/read-scale.ts [--quick]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { request } from 'undici';
import { RealCluster } from '../test/support/real-cluster.js';
import { freePort } from '../test/support/fault-proxy.js';
import { loopbackOnly, percentile, pool, progress, quick, round, runBounded, send, sleep, writeResult } from './lib.js';
import { pinLoadGenerator, pinningAvailable, startBare, startBareFastify, startPeer, startServer, totalCpuMsOf, type ServerProcess } from './processes.js';
import { median } from './single-peer.js';
import { interleavedRounds, ratioOf } from './interleaved.js';
import { idsInDelta, SseParser, type WatchDelta } from './sse-client.js';

export interface DiscoverPoint {
  instances: number;
  bytes: number;
  peerPerSecond: number;
  barePerSecond: number;
  ratio: number;
  /** The lowest and highest of the rounds' ratios (absent from results written before they were kept). */
  ratioRange?: [number, number];
  /**
   * The stack's ceiling: a bare fastify server (the framework the registry must use, none of
   * its work) sending the same bytes, and its ratio to the bare node:http server, in rounds of
   * their own (absent from results written before it was measured).
   */
  fastifyPerSecond?: number;
  fastifyRatio?: number;
  /**
   * The noise floor: the second process of the bare server against the first, the median of
   * the same rounds and its range (absent from results written before it was measured).
   */
  bareAgainstBare?: number;
  bareAgainstBareRange?: [number, number];
}

export interface FullFetchPoint {
  concurrent: number;
  seconds: number;
  cpuSeconds: number;
  peakRssGrowthMb: number;
  heartbeatP99Ms: number;
  heartbeatMaxMs: number;
  heartbeats: number;
  bytesEach: number;
}

export interface SsePoint {
  subscribers: number;
  subscribeAllSeconds: number;
  rssPerSubscriberKb: number;
  burstP50Ms: number;
  burstP99Ms: number;
  burstLastMs: number;
  delivered: number;
  /**
   * The reference for the subscribe phase: a bare node:http server that answers every stream
   * with the very snapshot bytes the peer sent (captured from it), subscribed the same way.
   * Absent from results written before it was measured.
   */
  bareSubscribeAllSeconds?: number;
  snapshotBytes?: number;
}

export interface ReadScaleResult {
  instances: number;
  pinned: boolean;
  discover: DiscoverPoint[];
  fullFetch: { cold: FullFetchPoint; points: FullFetchPoint[] };
  sse: SsePoint[];
  crossPeer: { writes: number; received: number; p50Ms: number; p99Ms: number; maxMs?: number };
}

export const READ_SCALE_TARGETS = {
  discoverRatio: 0.9,
  fullFetch8Seconds: 2,
  fullFetch8ExtraCpuSeconds: 1,
  fullFetchRssGrowthMb: 250,
  heartbeatP99Ms: 20,
  heartbeatMaxMs: 50,
  sseSubscribeSeconds: 5,
  ssePerSubscriberKb: 16,
  sseBurstMs: 500,
  crossPeerP99Ms: 30,
};

const METADATA = { a: 'alpha', b: 'bravo', c: 'charlie', d: 'delta', e: 'echo' };
const LEASE_MS = 600_000;

/** User + system CPU of a process so far, in seconds. */
const cpuSecondsOf = (pid: number) => totalCpuMsOf(pid) / 1_000;

export async function registerMany(url: string, services: string[], perService: number, prefix: string): Promise<void> {
  const target = pool(url, 32);
  const total = services.length * perService;
  const result = await runBounded(total, 32, 300_000, async (i) => {
    const service = services[Math.floor(i / perService)]!;
    const answer = await send(target, {
      method: 'POST',
      path: '/v1/instances',
      body: { service, instanceId: `${prefix}-${String(i % perService).padStart(4, '0')}`, host: '10.1.0.1', port: 1 + (i % 60_000), metadata: METADATA, leaseDurationMs: LEASE_MS },
    });
    if (answer.status !== 201 && answer.status !== 200) throw new Error(`register answered ${answer.status}: ${answer.body.slice(0, 100)}`);
  }, `register ${total}`);
  await target.close();
  if (result.errors > 0) throw new Error(`${result.errors} registrations failed`);
}

/** Rounds of 1 s per server in the discover measurement (all servers in turn each round). */
const DISCOVER_ROUNDS = 36;

async function measureDiscover(peer: ServerProcess, pinned: boolean): Promise<DiscoverPoint[]> {
  await registerMany(peer.url, ['discover-100'], 100, 'd');
  const points: DiscoverPoint[] = [];
  for (const [service, instances] of [['discover-100', 100], ['read-scale-0', 1_000]] as const) {
    const path = `/v1/services/${service}`;
    const body = await (await request(`${peer.url}${path}`)).body.arrayBuffer();
    const file = join(tmpdir(), `read-scale-${process.pid}-${instances}.json`);
    writeFileSync(file, Buffer.from(body));
    // Two processes of the very same bare server: the reference is their mean in each round
    // (one process alone can run up to an eighth faster or slower than another for the whole
    // run), and their ratio to each other is what this machine's noise alone makes of a ratio.
    const bares = [await startBare(file, pinned), await startBare(file, pinned)];
    const fastify = await startBareFastify(file, pinned);
    try {
      pinLoadGenerator(pinned);
      // 36 rounds: three identical bare servers measured like this (2026-12-03, bench/findings.md)
      // gave medians from 0.88x to 1.08x of each other over 12 to 48 rounds, so 18 left a run's
      // figure within noise of its target; twice the rounds narrow that by about a third.
      const rounds = await interleavedRounds([peer, ...bares, fastify], path, quick ? 4 : DISCOVER_ROUNDS, quick ? 750 : 1_000);
      const [peerRates, bareA, bareB, fastifyRates] = rounds.map((server) => server.map((figures) => figures.perSecond));
      pinLoadGenerator(false);
      const reference = bareA!.map((a, r) => (a + bareB![r]!) / 2);
      const peerRatio = ratioOf(peerRates!.map((rate, r) => rate / reference[r]!));
      const noise = ratioOf(bareB!.map((b, r) => b / bareA![r]!));
      const point: DiscoverPoint = {
        instances,
        bytes: body.byteLength,
        peerPerSecond: round(median(peerRates!), 0),
        barePerSecond: round(median(reference), 0),
        ratio: peerRatio.ratio,
        ratioRange: peerRatio.range,
        fastifyPerSecond: round(median(fastifyRates!), 0),
        fastifyRatio: ratioOf(fastifyRates!.map((rate, r) => rate / reference[r]!)).ratio,
        bareAgainstBare: noise.ratio,
        bareAgainstBareRange: noise.range,
      };
      progress(`discover ${instances}: ${JSON.stringify(point)}`);
      points.push(point);
    } finally {
      for (const bare of bares) await bare.stop();
      await fastify.stop();
    }
  }
  return points;
}

/**
 * A child process that sends a heartbeat every 10 ms until told to stop, then hands back the
 * latencies (ms) of those answered 200.
 */
export function startHeartbeatProber(url: string): { ready: Promise<void>; stop(): Promise<number[]> } {
  const code =
    `const {request}=require('undici');const url=process.argv[1];const out=[];let on=true;process.stdin.on('end',()=>{on=false});process.stdin.resume();` +
    `(async()=>{let first=true;while(on){const t0=performance.now();try{const r=await request(url,{method:'PUT'});await r.body.dump();if(r.statusCode===200&&!first)out.push(performance.now()-t0)}catch{}` +
    `if(first){first=false;process.stdout.write('ready\\n')}await new Promise((f)=>setTimeout(f,10))}process.stdout.write(JSON.stringify(out))})()`;
  const prober = spawnProber(url, code);
  return { ready: prober.ready, stop: async () => JSON.parse((await prober.stop()) || '[]') as number[] };
}

/**
 * Runs `code` (a `node -e` script given `url` as its argument, which prints `ready` once it has
 * sent its first request and its figures when its standard input ends) in a process of its own,
 * ahead of the load generator in the scheduler where it may be; `stop` ends it and hands back
 * what it printed after `ready`.
 */
export function spawnProber(url: string, code: string): { ready: Promise<void>; stop(): Promise<string> } {
  const child = spawn(process.execPath, ['-e', code, loopbackOnly(url)], { stdio: ['pipe', 'pipe', 'inherit'], cwd: fileURLToPath(new URL('../', import.meta.url)) });
  // The prober shares the load generator's core, which reading the documents keeps busy: ahead
  // of it in the scheduler, it measures the peer's delays rather than its own wait for the CPU.
  // Raising a priority needs root (as `npm run bench` runs here); otherwise it stays as it is.
  try {
    if (child.pid !== undefined) setPriority(child.pid, -10);
  } catch {
    progress('heartbeat prober: could not raise its priority (not root): its figures include its own waits for the CPU');
  }
  let text = '';
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    text += chunk;
    if (text.startsWith('ready\n')) onReady();
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    ready,
    stop: async () => {
      child.stdin.end();
      await exited;
      return text.replace(/^ready\n/, '');
    },
  };
}

/** `concurrent` full fetches at once, heartbeats to the same peer every 10 ms meanwhile. */
async function fullFetches(peer: ServerProcess, concurrent: number, heartbeatPath: string): Promise<FullFetchPoint> {
  const rssBeforeMb = peer.rssMb();
  let peakMb = rssBeforeMb;
  const cpuBefore = cpuSecondsOf(peer.pid);
  let fetching = true;
  const sampler = (async () => {
    while (fetching) {
      peakMb = Math.max(peakMb, peer.rssMb());
      await sleep(20);
    }
  })();
  // Heartbeats from a process of their own: the load generator is busy reading the fetched
  // documents, and would add its own delays to what it measured.
  const prober = startHeartbeatProber(`${peer.url}${heartbeatPath}`);
  await prober.ready;
  const t0 = performance.now();
  const sizes = await Promise.all(
    Array.from({ length: concurrent }, async () => {
      const response = await request(`${loopbackOnly(peer.url)}/eureka/apps`, { headers: { accept: 'application/json' }, bodyTimeout: 120_000, headersTimeout: 120_000 });
      let bytes = 0;
      for await (const chunk of response.body) bytes += (chunk as Buffer).length;
      if (response.statusCode !== 200) throw new Error(`full fetch answered ${response.statusCode}`);
      return bytes;
    }),
  );
  const seconds = (performance.now() - t0) / 1_000;
  fetching = false;
  await sampler;
  const beats = await prober.stop();
  const point: FullFetchPoint = {
    concurrent,
    seconds: round(seconds, 2),
    cpuSeconds: round(cpuSecondsOf(peer.pid) - cpuBefore, 2),
    peakRssGrowthMb: round(peakMb - rssBeforeMb, 0),
    heartbeatP99Ms: round(percentile(beats, 0.99), 1),
    heartbeatMaxMs: round(Math.max(0, ...beats), 1),
    heartbeats: beats.length,
    bytesEach: sizes[0]!,
  };
  progress(`full fetch x${concurrent}: ${JSON.stringify(point)}`);
  return point;
}

/** One raw SSE subscriber: when its snapshot ended, and when `marker` first came after it. */
interface RawSubscriber {
  socket: Socket;
  subscribedAtMs: number | null;
  markerAtMs: number | null;
  marker: Buffer | null;
  /** Every byte received, kept only when asked (to capture the snapshot once). */
  received?: Buffer[];
}

const SNAPSHOT = Buffer.from('event: snapshot');
const EVENT_END = Buffer.from('\n\n');
/** Longer than any marker searched for across two chunks. */
const SEAM_BYTES = 64;

function openSubscriber(port: number, path: string, keep = false): Promise<RawSubscriber> {
  return new Promise((resolve, reject) => {
    const subscriber: RawSubscriber = { socket: connect(port, '127.0.0.1'), subscribedAtMs: null, markerAtMs: null, marker: null, ...(keep ? { received: [] } : {}) };
    let phase = 0;
    let tail: Buffer = Buffer.alloc(0);
    subscriber.socket.on('connect', () => {
      subscriber.socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`);
      resolve(subscriber);
    });
    subscriber.socket.on('error', reject);
    subscriber.socket.on('data', (chunk: Buffer) => {
      if (subscriber.received && subscriber.subscribedAtMs === null) subscriber.received.push(chunk);
      // Markers may straddle two chunks: look in the seam (the end of the last chunk and the
      // start of this one), then in the chunk itself. Not concatenating whole chunks keeps the
      // load generator's cost to reading the bytes (5,000 subscribers read 2.5 GB of snapshots).
      const seam = tail.length > 0 ? Buffer.concat([tail, chunk.subarray(0, SEAM_BYTES)]) : null;
      const find = (needle: Buffer, from: number) => (from === 0 && seam !== null && seam.indexOf(needle) >= 0 ? 0 : chunk.indexOf(needle, from));
      let from = 0;
      if (phase === 0) {
        const at = find(SNAPSHOT, 0);
        if (at >= 0) {
          phase = 1;
          from = at;
        }
      }
      if (phase === 1) {
        const at = find(EVENT_END, from);
        if (at >= 0) {
          phase = 2;
          from = at;
          subscriber.subscribedAtMs = performance.now();
        }
      }
      if (phase === 2 && subscriber.marker !== null && subscriber.markerAtMs === null && find(subscriber.marker, from) >= 0) {
        subscriber.markerAtMs = performance.now();
      }
      // A copy: a view would keep the whole chunk alive for every subscriber.
      tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - SEAM_BYTES)));
    });
  });
}

/** Opens `count` raw subscribers of `path` (at most 256 connecting at once) and waits until each has its snapshot: seconds. */
async function subscribeAll(port: number, path: string, count: number, sockets: RawSubscriber[]): Promise<number> {
  const t0 = performance.now();
  // At most 256 connections opening at once: beyond the listen backlog the kernel retries after 1 s.
  const result = await runBounded(count, 256, 60_000, async () => {
    sockets.push(await openSubscriber(port, path));
  });
  if (result.errors > 0) throw new Error(`${result.errors} subscribers could not connect`);
  const deadline = performance.now() + 60_000;
  while (sockets.some((s) => s.subscribedAtMs === null) && performance.now() < deadline) await sleep(20);
  const subscribed = sockets.filter((s) => s.subscribedAtMs !== null);
  return (Math.max(...subscribed.map((s) => s.subscribedAtMs!)) - t0) / 1_000;
}

/**
 * The reference of the subscribe phase: a bare node:http server that answers every stream
 * with `snapshot` (the peer's, as captured) and keeps it open, subscribed to the same way.
 */
async function bareSubscribeSeconds(snapshot: Buffer, count: number): Promise<number> {
  const file = join(tmpdir(), `read-scale-sse-${process.pid}.bin`);
  writeFileSync(file, snapshot);
  const port = await freePort();
  const code =
    `const http=require('node:http');const fs=require('node:fs');const body=fs.readFileSync(process.argv[2]);` +
    `http.createServer((q,s)=>{if(q.url==='/healthz'){s.end('ok');return}s.writeHead(200,{'content-type':'text/event-stream','cache-control':'no-cache'});s.write(body)}).listen(Number(process.argv[1]),'127.0.0.1')`;
  const bare = await startServer({ name: 'bare-sse', command: process.execPath, args: ['-e', code, String(port), file], pinned: false, healthPath: '/healthz', port });
  const sockets: RawSubscriber[] = [];
  try {
    return await subscribeAll(port, '/', count, sockets);
  } finally {
    for (const s of sockets) s.socket.destroy();
    await bare.stop();
  }
}

async function measureSse(subscribers: number): Promise<SsePoint> {
  const peer = await startPeer('read-scale-sse', { pinned: false, logLevel: 'warn', extraArgs: [] });
  const sockets: RawSubscriber[] = [];
  try {
    const service = 'sse-scale';
    await registerMany(peer.url, [service], 1_000, 'sse');
    const port = Number(new URL(peer.url).port);
    // One subscriber first, keeping what it got: the bare reference sends the same snapshot.
    const probe = await openSubscriber(port, `/v1/watch?services=${service}`, true);
    const probeDeadline = performance.now() + 30_000;
    while (probe.subscribedAtMs === null && performance.now() < probeDeadline) await sleep(10);
    const received = Buffer.concat(probe.received ?? []);
    probe.socket.destroy();
    const bodyAt = received.indexOf('\r\n\r\n');
    const snapshot = received.subarray(bodyAt + 4, received.indexOf(EVENT_END, received.indexOf(SNAPSHOT)) + EVENT_END.length);
    await sleep(200);
    const rssBeforeMb = peer.rssMb();
    const subscribeAllSeconds = await subscribeAll(port, `/v1/watch?services=${service}`, subscribers, sockets);
    await sleep(500);
    const rssPerSubscriberKb = ((peer.rssMb() - rssBeforeMb) * 1024) / subscribers;
    // The burst: 100 status changes, one after the other; the last one is what each must hear.
    const marker = Buffer.from('"instanceId":"sse-0099"');
    for (const s of sockets) s.marker = marker;
    const writer = pool(peer.url, 1);
    for (let i = 0; i < 100; i++) {
      const answer = await send(writer, { method: 'PUT', path: `/v1/services/${service}/instances/sse-${String(i).padStart(4, '0')}/status`, body: { status: 'DOWN' } });
      if (answer.status !== 200) throw new Error(`status answered ${answer.status}`);
    }
    const lastWriteMs = performance.now();
    await writer.close();
    const burstDeadline = performance.now() + 30_000;
    while (sockets.some((s) => s.markerAtMs === null) && performance.now() < burstDeadline) await sleep(10);
    const delays = sockets.filter((s) => s.markerAtMs !== null).map((s) => Math.max(0, s.markerAtMs! - lastWriteMs));
    const point: SsePoint = {
      subscribers,
      subscribeAllSeconds: round(subscribeAllSeconds, 2),
      rssPerSubscriberKb: round(rssPerSubscriberKb, 1),
      burstP50Ms: round(percentile(delays, 0.5), 1),
      burstP99Ms: round(percentile(delays, 0.99), 1),
      burstLastMs: round(Math.max(0, ...delays), 1),
      delivered: delays.length,
      bareSubscribeAllSeconds: 0,
      snapshotBytes: snapshot.length,
    };
    for (const s of sockets) s.socket.destroy();
    await peer.stop();
    point.bareSubscribeAllSeconds = round(await bareSubscribeSeconds(snapshot, subscribers), 2);
    progress(`sse ${subscribers}: ${JSON.stringify(point)}`);
    return point;
  } finally {
    for (const s of sockets) s.socket.destroy();
    await peer.stop();
  }
}

/**
 * Register on A, delta on a watcher of B, one write every `CROSS_PEER_GAP_MS`: low load, each
 * write finds its service quiet (past `watchCoalesceMs`, 50 ms), so it is pushed at once. 200
 * writes, not 60: the p99 of 60 is their slowest, one scheduling hiccup of a shared machine.
 */
const CROSS_PEER_GAP_MS = 100;

async function measureCrossPeer(writes: number): Promise<ReadScaleResult['crossPeer']> {
  const cluster = await RealCluster.start({ size: 2, file: { limits: { rateLimitPerSecond: 0 } }, cluster: { profile: 'lan' }, args: ['--log-level', 'warn'] });
  const aborter = new AbortController();
  try {
    const [a, b] = cluster.ids.map((id) => cluster.url(id)) as [string, string];
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    let snapshot = false;
    const response = await request(`${b}/v1/watch?services=cross-peer`, { headers: { accept: 'text/event-stream' }, signal: aborter.signal });
    const reading = (async () => {
      const parser = new SseParser();
      response.body.setEncoding('utf8');
      for await (const chunk of response.body) {
        const now = performance.now();
        for (const event of parser.push(chunk as string)) {
          if (event.event === 'snapshot') snapshot = true;
          if (event.event !== 'delta') continue;
          for (const id of idsInDelta(JSON.parse(event.data) as WatchDelta)) if (sentAt.has(id)) latencies.push(now - sentAt.get(id)!);
        }
      }
    })().catch(() => undefined);
    while (!snapshot) await sleep(10);
    const writer = pool(a, 1);
    for (let w = 0; w < writes; w++) {
      const id = `x-${w}`;
      sentAt.set(id, performance.now());
      await send(writer, { method: 'POST', path: '/v1/instances', body: { service: 'cross-peer', instanceId: id, host: '10.2.0.1', port: 1 + w, leaseDurationMs: LEASE_MS } });
      await sleep(CROSS_PEER_GAP_MS);
    }
    await sleep(500);
    await writer.close();
    aborter.abort();
    await reading;
    const result = {
      writes,
      received: latencies.length,
      p50Ms: round(percentile(latencies, 0.5), 1),
      p99Ms: round(percentile(latencies, 0.99), 1),
      maxMs: round(Math.max(0, ...latencies), 1),
    };
    progress(`cross-peer watch: ${JSON.stringify(result)}`);
    return result;
  } finally {
    aborter.abort();
    await cluster.stop();
  }
}

/** Runs every part; `quick` is the short form. */
/** The parts of the benchmark; `--only=NAME` (run directly) runs one, to look into it. */
export type ReadScalePart = 'discover' | 'fullfetch' | 'sse' | 'crosspeer';

/** Discover and full fetch, on one peer holding 100,000 instances (10,000 quick). */
async function measureOnePeer(quick: boolean, runs: (part: ReadScalePart) => boolean, pinned: boolean) {
  const services = quick ? 10 : 100;
  const instances = services * 1_000;
  let discover: DiscoverPoint[] = [];
  let fullFetch: ReadScaleResult['fullFetch'] | undefined;
  if (!runs('discover') && !runs('fullfetch')) return { instances, discover, fullFetch };
  const peer = await startPeer('read-scale', { pinned, logLevel: 'warn' });
  try {
    progress(`read scale: ${instances} instances in ${services} services of 1,000 (5 metadata keys), peer ${pinned ? 'pinned to CPU 0' : 'not pinned'}`);
    await registerMany(peer.url, Array.from({ length: services }, (_, i) => `read-scale-${i}`), 1_000, 'i');
    if (runs('discover')) discover = await measureDiscover(peer, pinned);
    const heartbeatPath = '/v1/services/read-scale-0/instances/i-0000/heartbeat';
    if (runs('fullfetch')) {
      pinLoadGenerator(pinned);
      const cold = await fullFetches(peer, 1, heartbeatPath);
      const points: FullFetchPoint[] = [];
      for (const concurrent of [1, 8, 32]) points.push(await fullFetches(peer, concurrent, heartbeatPath));
      pinLoadGenerator(false);
      fullFetch = { cold, points };
    }
  } finally {
    pinLoadGenerator(false);
    await peer.stop();
  }
  return { instances, discover, fullFetch };
}

export async function benchReadScale(options: { quick: boolean; only?: ReadScalePart }): Promise<ReadScaleResult> {
  const runs = (part: ReadScalePart) => options.only === undefined || options.only === part;
  const pinned = pinningAvailable();
  const { instances, discover, fullFetch: measured } = await measureOnePeer(options.quick, runs, pinned);
  const sse: SsePoint[] = [];
  if (runs('sse')) for (const subscribers of options.quick ? [1_000] : [1_000, 5_000]) sse.push(await measureSse(subscribers));
  const crossPeer = runs('crosspeer') ? await measureCrossPeer(options.quick ? 30 : 200) : { writes: 0, received: 0, p50Ms: 0, p99Ms: 0 };
  const none = { concurrent: 0, seconds: 0, cpuSeconds: 0, peakRssGrowthMb: 0, heartbeatP99Ms: 0, heartbeatMaxMs: 0, heartbeats: 0, bytesEach: 0 };
  const fullFetch = measured ?? { cold: none, points: [] };
  return { instances, pinned, discover, fullFetch, sse, crossPeer };
}

const yes = (ok: boolean) => (ok ? 'yes' : '**NO**');

/** The rows of RESULTS.md's summary (bench/report.ts). */
export function readScaleRows(result: ReadScaleResult): Record<string, string>[] {
  const t = READ_SCALE_TARGETS;
  const rows: Record<string, string>[] = [];
  for (const d of result.discover) {
    rows.push({
      figure: `discover of a ${d.instances.toLocaleString('en-US')}-instance service (${Math.round(d.bytes / 1024)} KB), 16 in flight`,
      value: `${d.peerPerSecond.toLocaleString('en-US')}/s`,
      reference:
        `bare node:http sending the same bytes ${d.barePerSecond.toLocaleString('en-US')}/s` +
        (d.fastifyRatio === undefined ? '' : `; bare fastify (the stack's ceiling) ${d.fastifyPerSecond!.toLocaleString('en-US')}/s, ${d.fastifyRatio}x`) +
        (d.bareAgainstBare === undefined ? '' : `; noise: two bare node:http processes ${d.bareAgainstBare}x of each other (rounds ${d.bareAgainstBareRange![0]}-${d.bareAgainstBareRange![1]})`),
      ratio: d.ratioRange ? `${d.ratio}x (rounds ${d.ratioRange[0]}-${d.ratioRange[1]})` : `${d.ratio}x`,
      target: `>= ${t.discoverRatio}x`,
      met: yes(d.ratio >= t.discoverRatio),
    });
  }
  const full = result.instances === 100_000;
  const { cold } = result.fullFetch;
  for (const p of result.fullFetch.points) {
    const eight = p.concurrent === 8 && full;
    const extraCpu = round(p.cpuSeconds, 2);
    rows.push({
      figure: `Eureka full fetch of ${result.instances.toLocaleString('en-US')} instances (JSON, ${Math.round(p.bytesEach / 1_048_576)} MB), ${p.concurrent} at once`,
      value: `${p.seconds} s together, ${p.cpuSeconds} CPU-s, RSS +${p.peakRssGrowthMb} MB; heartbeats meanwhile p99 ${p.heartbeatP99Ms} ms, max ${p.heartbeatMaxMs} ms`,
      reference: `the first (cold) fetch, which builds the document: ${cold.seconds} s, ${cold.cpuSeconds} CPU-s`,
      ratio: '',
      target: eight
        ? `<= ${t.fullFetch8Seconds} s, <= ${t.fullFetch8ExtraCpuSeconds} CPU-s beyond the build, RSS <= +${t.fullFetchRssGrowthMb} MB, heartbeats p99 <= ${t.heartbeatP99Ms} ms, max <= ${t.heartbeatMaxMs} ms`
        : p.concurrent === 8
          ? 'set at 100,000 instances (not reached in this mode)'
          : '',
      met: eight
        ? yes(p.seconds <= t.fullFetch8Seconds && extraCpu <= t.fullFetch8ExtraCpuSeconds && p.peakRssGrowthMb <= t.fullFetchRssGrowthMb && p.heartbeatP99Ms <= t.heartbeatP99Ms && p.heartbeatMaxMs <= t.heartbeatMaxMs)
        : '',
    });
  }
  for (const s of result.sse) {
    const target = s.subscribers === 5_000;
    rows.push({
      figure: `SSE: ${s.subscribers.toLocaleString('en-US')} subscribers of one 1,000-instance service`,
      value: `all subscribed in ${s.subscribeAllSeconds} s, ${s.rssPerSubscriberKb} KB RSS each; 100-change burst: p50 ${s.burstP50Ms} ms, p99 ${s.burstP99Ms} ms, last ${s.burstLastMs} ms after the last write (${s.delivered} delivered)`,
      reference:
        s.bareSubscribeAllSeconds === undefined
          ? ''
          : `bare node:http sending the same ${Math.round((s.snapshotBytes ?? 0) / 1024)} KB snapshot to as many streams: all in ${s.bareSubscribeAllSeconds} s`,
      ratio: s.bareSubscribeAllSeconds ? `${round(s.subscribeAllSeconds / s.bareSubscribeAllSeconds, 2)}x the time` : '',
      target: target ? `<= ${t.sseSubscribeSeconds} s, <= ${t.ssePerSubscriberKb} KB each, last <= ${t.sseBurstMs} ms` : '',
      met: target
        ? yes(s.subscribeAllSeconds <= t.sseSubscribeSeconds && s.rssPerSubscriberKb <= t.ssePerSubscriberKb && s.burstLastMs <= t.sseBurstMs && s.delivered === s.subscribers)
        : '',
    });
  }
  rows.push({
    figure: 'register on peer A to the delta on a watcher of peer B, low load',
    value: `p50 ${result.crossPeer.p50Ms} ms, p99 ${result.crossPeer.p99Ms} ms${result.crossPeer.maxMs === undefined ? '' : `, max ${result.crossPeer.maxMs} ms`} (${result.crossPeer.received}/${result.crossPeer.writes})`,
    reference: '',
    ratio: '',
    target: `p99 <= ${t.crossPeerP99Ms} ms`,
    met: yes(result.crossPeer.p99Ms <= t.crossPeerP99Ms && result.crossPeer.received === result.crossPeer.writes),
  });
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length) as ReadScalePart | undefined;
  const result = await benchReadScale({ quick, only });
  // A partial run is for looking into one part: its figures are in the progress lines only.
  if (only === undefined) progress(`written to ${writeResult(`read-scale-${quick ? 'quick' : 'full'}`, result)}`);
}
