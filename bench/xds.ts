/**
 * xDS (gRPC ADS, docs/xds.md), two figures:
 * 1. Register-to-route: a register on peer A until a real @grpc/grpc-js-xds client of peer B
 *    (`xds:///xds-bench`) routes a call to the new instance; the reference, in the same run,
 *    is the register's own round trip.
 * 2. Fan-out cost: 1,000 ADS streams (raw grpc-js streams over 20 channels with wide receive
 *    windows, each ACKing like a client, in 2 processes of their own: bench/xds-floor.ts) on
 *    peer B watching one 1,000-instance service while it changes: peer B's CPU and RSS, against
 *    the same changes with no stream open, and how long a change takes to reach every stream.
 * 3. The floors, in the same run with the same clients: a bare grpc-js ADS server, then
 *    node:http2 alone, writing the peer's last push to as many streams (bench/xds-floor.ts).
 * Real peer processes on 127.0.0.1 (bench/processes.ts's helpers' style); the machine may be loaded.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { credentials, makeClientConstructor, makeGenericClientConstructor, type ClientDuplexStream } from '@grpc/grpc-js';
import { greeterClient, startGreeter, xdsPortOf, type GreeterServer } from '../test/support/xds.js';
import { RealCluster } from '../test/support/real-cluster.js';
import { XdsProtos, TYPE_URLS } from '../src/xds/protos.js';
import { percentile, pool, progress, round, send, sleep } from './lib.js';
import { cpuMsOf, rssMb, totalCpuMsOf } from './processes.js';
import { epochNow, startStreamClients, startXdsFloor } from './xds-floor.js';

export interface XdsBenchResult {
  /** Register on A to the first call routed to the new instance by a client of B. */
  routeP50Ms: number;
  routeP99Ms: number;
  registers: number;
  /** The reference: the register's own round trip. */
  writeAckP50Ms: number;
  writeAckP99Ms: number;
  streams: number;
  instances: number;
  changes: number;
  /** A change's write to the last of the streams receiving it. */
  fanOutP50Ms: number;
  fanOutP99Ms: number;
  delivered: number;
  expected: number;
  /**
   * Peer B's CPU per change (ms), from the first change until every stream holds the last one
   * (with streams) or 1 s after it (without): per change rather than per second, since on a
   * loaded machine the work stretches over longer than the changes take.
   */
  cpuMsPerChangeWithStreams: number;
  cpuMsPerChangeWithout: number;
  rssMbWithStreams: number;
  rssMbWithout: number;
  /** The stream clients' CPU per change (their decoding and ACKs, in processes of their own), over the same span. */
  clientCpuMsPerChange: number;
  /** Responses each stream received per change (1: one push per change, as the floor writes one per round). */
  responsesPerStreamPerChange?: number;
  /** The bytes of the last push (the serialized DiscoveryResponse the floor writes). */
  responseBytes?: number;
  /**
   * The floor (bench/xds-floor.ts): a bare grpc-js server writing those bytes to as many
   * streams of the same clients, 30 rounds at the changes' pace: its CPU per round, the time
   * to its last stream, and its clients' CPU per round.
   */
  floorCpuMsPerChange?: number;
  floorFanOutP50Ms?: number;
  floorFanOutP99Ms?: number;
  floorClientCpuMsPerChange?: number;
  /**
   * The HTTP/2 floor: node:http2 alone (no gRPC library) writing the same gRPC frame to as many
   * streams of the same clients, reading their ACKs without decoding them; rounds: those every
   * stream received.
   */
  http2FloorCpuMsPerChange?: number;
  http2FloorFanOutP50Ms?: number;
  http2FloorFanOutP99Ms?: number;
  http2FloorRounds?: number;
  /** When the run started, and the machine's 1-minute load average then. */
  measuredAt?: string;
  loadAverage?: number;
}

const SERVICE = 'xds-bench';
/** The churning instance moves to a new address per change: its text (all of one length) tells which change a push carries. */
const CHURN_PREFIX = '10.250.';
const churnHostOf = (change: number) => `${CHURN_PREFIX}${100 + change}.1`;
const FANOUT_SERVICE = 'xds-fanout';


const registerBody = (service: string, host: string, port: number, instanceId: string, weight = 1) => ({ service, host, port, instanceId, weight, leaseDurationMs: 600_000 });

export interface XdsBenchOptions {
  quick: boolean;
  /** The fan-out figures alone (no register-to-route rounds), to measure a change to the push path. */
  fanOutOnly?: boolean;
  /** How many processes the 1,000 stream clients are split over (2 by default). */
  clientProcesses?: number;
  /** Where peer B writes a CPU profile of the changes with streams and their fan-out (bench/cpu-prof-preload.cjs). */
  profileDir?: string;
}

export async function benchXds(options: XdsBenchOptions): Promise<XdsBenchResult> {
  const measuredAt = new Date().toISOString();
  const loadAverage = loadavg()[0]!;
  // --fan-out-only: the fan-out figures alone (no register-to-route rounds), to measure a change to the push path.
  const registers = options.fanOutOnly ? 0 : options.quick ? 10 : 30;
  const streams = 1_000;
  const instances = 1_000;
  const changes = options.quick ? 10 : 30;
  progress(`xds: ${registers} registers on A routed by a grpc-js-xds client of B; ${streams} ADS streams on B watching ${instances} instances through ${changes} changes`);
  // --profile: the peers start with a profiler that SIGUSR2 starts and stops (bench/cpu-prof-preload.cjs);
  // the stream clients, started later, do not.
  const nodeOptions = process.env.NODE_OPTIONS;
  if (options.profileDir) {
    process.env.NODE_OPTIONS = `${nodeOptions ?? ''} --require ${fileURLToPath(new URL('./cpu-prof-preload.cjs', import.meta.url))}`;
    process.env.CPU_PROF_DIR = options.profileDir;
  }
  let cluster: RealCluster;
  try {
    cluster = await RealCluster.start({ size: 2, file: { xds: { port: 0 }, limits: { rateLimitPerSecond: 0 } }, cluster: { profile: 'lan' } });
  } finally {
    if (nodeOptions === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = nodeOptions;
  }
  const dir = mkdtempSync(join(tmpdir(), 'registry-bench-xds-'));
  const greeters: GreeterServer[] = [];
  try {
    const poolA = pool(cluster.url('peer-a'), 8);
    const xdsB = await xdsPortOf(cluster.peers.get('peer-b')!);
    // 1. Register to route.
    writeFileSync(join(dir, 'bootstrap.json'), JSON.stringify({ xds_servers: [{ server_uri: `127.0.0.1:${xdsB}`, channel_creds: [{ type: 'insecure' }] }], node: { id: 'bench', locality: {} } }));
    process.env.GRPC_XDS_BOOTSTRAP = join(dir, 'bootstrap.json');
    (createRequire(import.meta.url)('@grpc/grpc-js-xds') as { register(): void }).register();
    for (let i = 0; i <= registers; i += 1) greeters.push(await startGreeter(`g${i}`));
    const register = (greeter: GreeterServer) => send(poolA, { method: 'POST', path: '/v1/instances', body: registerBody(SERVICE, '127.0.0.1', greeter.port, greeter.name) });
    const cancel = (greeter: GreeterServer) => send(poolA, { method: 'DELETE', path: `/v1/services/${SERVICE}/instances/${greeter.name}` });
    await register(greeters[0]!);
    const client = greeterClient(`xds:///${SERVICE}`);
    const seen = new Map<string, number>();
    let calling = true;
    const caller = async () => {
      while (calling) {
        const name = await client.hello().catch(() => '');
        if (name && !seen.has(name)) seen.set(name, performance.now());
      }
    };
    const callers = Array.from({ length: 4 }, caller);
    const routed: number[] = [];
    const acks: number[] = [];
    for (let i = 1; i <= registers; i += 1) {
      const sentAt = performance.now();
      const answer = await register(greeters[i]!);
      acks.push(performance.now() - sentAt);
      if (answer.status !== 201) throw new Error(`register answered ${answer.status}`);
      const deadline = sentAt + 10_000;
      while (!seen.has(greeters[i]!.name) && performance.now() < deadline) await sleep(1);
      if (seen.has(greeters[i]!.name)) routed.push(seen.get(greeters[i]!.name)! - sentAt);
      // One instance at a time: the next new one then takes every other call at once.
      await cancel(greeters[i - 1]!);
      await sleep(200);
    }
    calling = false;
    await Promise.all(callers);
    client.client.close();

    // 2. Fan-out cost.
    for (let i = 0; i < instances; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => send(poolA, { method: 'POST', path: '/v1/instances', body: registerBody(FANOUT_SERVICE, `10.1.${(i + j) >> 8}.${(i + j) & 255}`, 8080, `f${i + j}`) })),
      );
    }
    await sleep(2_000);
    const pidB = cluster.peers.get('peer-b')!.child.pid!;
    const churn = async (allDelivered: () => Promise<boolean>): Promise<{ cpuMsPerChange: number; sentAt: number[] }> => {
      const cpuBefore = totalCpuMsOf(pidB);
      const systemBefore = cpuMsOf(pidB).systemMs;
      const sentAt: number[] = [];
      for (let c = 0; c < changes; c += 1) {
        sentAt.push(epochNow());
        await send(poolA, { method: 'POST', path: '/v1/instances', body: registerBody(FANOUT_SERVICE, churnHostOf(c), 8080, 'churn') });
        await sleep(300);
      }
      await sleep(1_000);
      const deadline = performance.now() + 60_000;
      while (!(await allDelivered()) && performance.now() < deadline) await sleep(50);
      if (process.env.XDS_BENCH_DEBUG) progress(`xds: of which system (kernel) CPU ${round((cpuMsOf(pidB).systemMs - systemBefore) / changes)} ms per change`);
      return { cpuMsPerChange: (totalCpuMsOf(pidB) - cpuBefore) / changes, sentAt };
    };
    const without = await churn(async () => true);
    const rssWithout = rssMb(pidB);

    // The streams run in processes of their own (bench/xds-floor.ts), so that the time to the
    // last stream is not bound by this process's event loop.
    const clientsOf = (port: number) => startStreamClients({ port, streams, processes: options.clientProcesses ?? 2, channels: 20, service: FANOUT_SERVICE, typeUrl: TYPE_URLS.endpoints, hostPrefix: CHURN_PREFIX, changes });
    const clients = await clientsOf(xdsB);
    const clientCpuMs = () => clients.pids.reduce((sum, pid) => sum + totalCpuMsOf(pid), 0);
    await sleep(1_000);
    await clients.measure();
    const clientCpuBefore = clientCpuMs();
    // --profile: peer B's profile covers these changes and their fan-out only.
    if (options.profileDir) process.kill(pidB, 'SIGUSR2');
    const withStreams = await churn(async () => (await clients.holdingLast()) >= streams);
    if (options.profileDir) process.kill(pidB, 'SIGUSR2');
    const clientCpuMsPerChange = (clientCpuMs() - clientCpuBefore) / changes;
    const rssWith = rssMb(pidB);
    const arrivals = await clients.report();
    const lastResponse = await responseBytesOf(xdsB, FANOUT_SERVICE);
    await clients.stop();

    // A stream has change c once a push carries c or a later one.
    const fanOut: number[] = [];
    let delivered = 0;
    for (let c = 0; c < changes; c += 1) {
      let last = 0;
      let reached = 0;
      for (const times of arrivals.changeAt) {
        const at = Math.min(...times.slice(c).filter((time): time is number => time !== null));
        if (Number.isFinite(at)) {
          reached += 1;
          last = Math.max(last, at);
        }
      }
      delivered += reached;
      if (process.env.XDS_BENCH_DEBUG) progress(`xds: change ${c}: ${reached}/${streams} streams, last after ${round(last - withStreams.sentAt[c]!)} ms`);
      if (reached === streams) fanOut.push(last - withStreams.sentAt[c]!);
    }

    // 3. The floors: a bare grpc-js server, then node:http2 alone, writing the last push's bytes to as many streams.
    const measureFloor = async (kind: 'grpc-js' | 'http2'): Promise<FloorFigures> => {
      progress(`xds: ${kind} floor (a bare server writing the same bytes to every stream)`);
      const floor = await startXdsFloor(lastResponse, kind);
      try {
        const floorClients = await clientsOf(floor.port);
        try {
          await sleep(1_000);
          await floorClients.measure();
          const clientsCpu = () => floorClients.pids.reduce((sum, pid) => sum + totalCpuMsOf(pid), 0);
          const clientBefore = clientsCpu();
          const cpuBefore = totalCpuMsOf(floor.pid);
          const wentAt: number[] = [];
          for (let r = 0; r < changes; r += 1) {
            wentAt.push(epochNow());
            await floor.round();
            await sleep(300);
          }
          await sleep(1_000);
          const deadline = performance.now() + 60_000;
          while ((await floorClients.count()) < streams * changes && performance.now() < deadline) await sleep(50);
          const cpuMsPerRound = (totalCpuMsOf(floor.pid) - cpuBefore) / changes;
          const clientCpuMsPerRound = (clientsCpu() - clientBefore) / changes;
          const { responseAt } = await floorClients.report();
          const lasts: number[] = [];
          for (let r = 0; r < changes; r += 1) {
            const times = responseAt.map((list) => list[r]);
            if (times.every((time) => time !== undefined)) lasts.push(Math.max(...(times as number[])) - wentAt[r]!);
          }
          return { cpuMsPerRound, fanOutP50Ms: percentile(lasts, 0.5), fanOutP99Ms: percentile(lasts, 0.99), clientCpuMsPerRound, rounds: lasts.length };
        } finally {
          await floorClients.stop();
        }
      } finally {
        await floor.stop();
      }
    };
    const floorFigures = await measureFloor('grpc-js');
    const http2Floor = await measureFloor('http2');
    return {
      routeP50Ms: round(percentile(routed, 0.5)),
      routeP99Ms: round(percentile(routed, 0.99)),
      registers: routed.length,
      writeAckP50Ms: round(percentile(acks, 0.5)),
      writeAckP99Ms: round(percentile(acks, 0.99)),
      streams,
      instances,
      changes,
      fanOutP50Ms: round(percentile(fanOut, 0.5)),
      fanOutP99Ms: round(percentile(fanOut, 0.99)),
      delivered,
      expected: streams * changes,
      cpuMsPerChangeWithStreams: round(withStreams.cpuMsPerChange),
      cpuMsPerChangeWithout: round(without.cpuMsPerChange),
      rssMbWithStreams: round(rssWith),
      rssMbWithout: round(rssWithout),
      clientCpuMsPerChange: round(clientCpuMsPerChange),
      responsesPerStreamPerChange: round(arrivals.responseAt.reduce((sum, times) => sum + times.length, 0) / (streams * changes), 2),
      responseBytes: lastResponse.length,
      floorCpuMsPerChange: round(floorFigures.cpuMsPerRound),
      floorFanOutP50Ms: round(floorFigures.fanOutP50Ms),
      floorFanOutP99Ms: round(floorFigures.fanOutP99Ms),
      floorClientCpuMsPerChange: round(floorFigures.clientCpuMsPerRound),
      http2FloorCpuMsPerChange: round(http2Floor.cpuMsPerRound),
      http2FloorFanOutP50Ms: round(http2Floor.fanOutP50Ms),
      http2FloorFanOutP99Ms: round(http2Floor.fanOutP99Ms),
      http2FloorRounds: http2Floor.rounds,
      measuredAt,
      loadAverage: round(loadAverage, 1),
    };
  } finally {
    for (const greeter of greeters) greeter.close();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A floor's figures: its CPU per round, the time to its last stream, its clients' CPU per round, the rounds every stream received. */
interface FloorFigures {
  cpuMsPerRound: number;
  fanOutP50Ms: number;
  fanOutP99Ms: number;
  clientCpuMsPerRound: number;
  rounds: number;
}

/** The serialized DiscoveryResponse a new stream subscribed to the fan-out service gets now (the floor writes it). */
async function responseBytesOf(port: number, service: string): Promise<Buffer> {
  const sotw = new XdsProtos().ads.StreamAggregatedResources!;
  const Raw = makeGenericClientConstructor({ raw: { ...sotw, responseDeserialize: (bytes: Buffer) => bytes } }, 'RawAds');
  const client = new Raw(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as { raw(): ClientDuplexStream<object, Buffer>; close(): void };
  try {
    const call = client.raw();
    const bytes = await Promise.race([
      new Promise<Buffer>((resolve, reject) => {
        call.once('data', resolve);
        call.once('error', reject);
        call.write({ node: { id: 'bench-floor-bytes' }, type_url: TYPE_URLS.endpoints, resource_names: [service] });
      }),
      sleep(30_000).then(() => Promise.reject(new Error('no response to read the floor bytes from in 30 s'))),
    ]);
    call.cancel();
    return bytes;
  } finally {
    client.close();
  }
}

export interface XdsAttackResult {
  /** The probe for 2 s with no attack: the machine's own noise. */
  quiet: AttackFigures;
  /** One incremental stream, 8 requests of 10,000 unknown names (about 200 KB each). */
  delta: AttackFigures & { answered: number; endedWith: string };
  /** 100 state-of-the-world streams of one address, 10,000 unknown names each. */
  streams: AttackFigures & { served: number; refused: number };
  /** Targets (issue 33): heartbeat max <= 50 ms, RSS growth <= 50 MB. */
  met: boolean;
}

interface AttackFigures {
  /** The longest heartbeat round trip on the main port while the attack ran (a failed one counts until it failed). */
  heartbeatMaxMs: number;
  heartbeats: number;
  heartbeatErrors: number;
  /** The peer's RSS after the attack (its streams still open), less before it. */
  rssGrowthMb: number;
  durationMs: number;
}

/** The heartbeat probe's worker: PUT heartbeats one after the other until told to stop; posts the longest round trip. */
const HEARTBEAT_PROBE = `
const { parentPort, workerData } = require('node:worker_threads');
const { request } = require('undici');
let running = true;
parentPort.once('message', () => (running = false));
(async () => {
  let heartbeatMaxMs = 0, heartbeats = 0, heartbeatErrors = 0;
  while (running) {
    const t0 = performance.now();
    try {
      const answer = await request(workerData.url, { method: 'PUT' });
      await answer.body.dump();
      if (answer.statusCode !== 200) heartbeatErrors += 1;
    } catch {
      heartbeatErrors += 1;
    }
    heartbeatMaxMs = Math.max(heartbeatMaxMs, performance.now() - t0);
    heartbeats += 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  parentPort.postMessage({ heartbeatMaxMs, heartbeats, heartbeatErrors });
})();
`;

type AdsClient = { StreamAggregatedResources(): ClientDuplexStream<object, unknown>; DeltaAggregatedResources(): ClientDuplexStream<object, unknown>; close(): void };

/**
 * The xDS attacks of issue 33, each beside a heartbeat probe (a PUT heartbeat on the peer's
 * main port, one after the other, for as long as the attack runs): what they cost the peer's
 * event loop and memory. Every stream and loop is bounded in count and time; 127.0.0.1 only.
 */
export async function benchXdsAttacks(): Promise<XdsAttackResult> {
  const cluster = await RealCluster.start({ size: 1, file: { xds: { port: 0 } }, cluster: { profile: 'lan' } });
  try {
    const peer = cluster.peers.get('peer-a')!;
    const beats = pool(cluster.url('peer-a'), 2);
    const registered = await send(beats, { method: 'POST', path: '/v1/instances', body: registerBody('beat', '10.9.0.1', 8080, 'beat-1') });
    if (registered.status !== 201) throw new Error(`register answered ${registered.status}`);
    const port = await xdsPortOf(peer);
    const protos = new XdsProtos();
    const Client = makeClientConstructor(protos.ads, 'AggregatedDiscoveryService');
    // Big requests: each channel's window is widened so the client side is not what waits.
    const channelOptions = { 'grpc.use_local_subchannel_pool': 1, 'grpc-node.flow_control_window': 8 * 1024 * 1024 };
    const names = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `attack-${prefix}-unknown-service-${i}`);

    /**
     * Runs `attack` beside the heartbeat probe. The probe runs in a worker thread of its own:
     * in this process it would also time the attack's own encoding (100 requests of 10,000
     * names are about a second of this process's CPU), which is not the peer's doing.
     */
    const probed = async (attack: () => Promise<void>): Promise<AttackFigures> => {
      await sleep(500);
      const rssBefore = rssMb(peer.child.pid!);
      const probe = new Worker(HEARTBEAT_PROBE, { eval: true, workerData: { url: `${cluster.url('peer-a')}/v1/services/beat/instances/beat-1/heartbeat` } });
      const figures = new Promise<{ heartbeatMaxMs: number; heartbeats: number; heartbeatErrors: number }>((resolve, reject) => {
        probe.once('message', resolve);
        probe.once('error', reject);
      });
      await new Promise((resolve) => probe.once('online', resolve));
      const startedAt = performance.now();
      await attack();
      const durationMs = performance.now() - startedAt;
      // The probe runs on a moment after the attack, for the work it left behind.
      await sleep(1_000);
      probe.postMessage('stop');
      const { heartbeatMaxMs, heartbeats, heartbeatErrors } = await figures;
      await probe.terminate();
      return { heartbeatMaxMs: round(heartbeatMaxMs), heartbeats, heartbeatErrors, rssGrowthMb: round(rssMb(peer.child.pid!) - rssBefore), durationMs: round(durationMs) };
    };

    // 0. The probe with no attack: what the machine's own load makes of it (the noise floor).
    const quiet = await probed(() => sleep(2_000));

    // 1. The delta attack: one stream, 8 requests of 10,000 unknown names.
    let answered = 0;
    let endedWith = 'open';
    const deltaClient = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), channelOptions) as unknown as AdsClient;
    const delta = await probed(async () => {
      const call = deltaClient.DeltaAggregatedResources();
      const ended = new Promise<void>((resolve) => {
        call.on('error', (error: { code?: number; details?: string }) => {
          endedWith = `status ${error.code}: ${error.details?.slice(0, 120)}`;
          resolve();
        });
        call.on('end', resolve);
      });
      call.on('data', () => (answered += 1));
      for (let request = 0; request < 8; request += 1) {
        call.write({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: names(`d${request}`, 10_000) });
      }
      // Bounded: the stream ends (refused) or every request had its time.
      await Promise.race([ended, sleep(30_000)]);
      call.cancel();
    });
    deltaClient.close();

    // 2. 100 state-of-the-world streams of 10,000 names each, from one address, kept open.
    let served = 0;
    let refused = 0;
    const streamClients = Array.from({ length: 10 }, () => new Client(`127.0.0.1:${port}`, credentials.createInsecure(), channelOptions) as unknown as AdsClient);
    const calls: ClientDuplexStream<object, unknown>[] = [];
    const streams = await probed(async () => {
      const outcomes: Promise<void>[] = [];
      for (let s = 0; s < 100; s += 1) {
        const call = streamClients[s % streamClients.length]!.StreamAggregatedResources();
        calls.push(call);
        outcomes.push(
          Promise.race([
            new Promise<void>((resolve) => {
              call.on('data', () => {
                served += 1;
                resolve();
              });
              call.on('error', () => {
                refused += 1;
                resolve();
              });
            }),
            sleep(30_000),
          ]),
        );
        call.write({ type_url: TYPE_URLS.cluster, resource_names: names(`s${s}`, 10_000) });
      }
      await Promise.all(outcomes);
    });
    for (const call of calls) call.cancel();
    for (const client of streamClients) client.close();
    const met = [delta, streams].every((figures) => figures.heartbeatMaxMs <= 50 && figures.rssGrowthMb <= 50);
    return { quiet, delta: { ...delta, answered, endedWith }, streams: { ...streams, served, refused }, met };
  } finally {
    await cluster.stop();
  }
}

/** The value of `--name=value` on the command line. */
function argValue(name: string): string | undefined {
  return process.argv.find((arg) => arg.startsWith(`${name}=`))?.slice(name.length + 1);
}

if (process.argv[1]?.endsWith('xds.ts')) {
  const result = process.argv.includes('--attacks')
    ? await benchXdsAttacks()
    : await benchXds({
        quick: process.argv.includes('--quick'),
        fanOutOnly: process.argv.includes('--fan-out-only'),
        clientProcesses: Number(argValue('--client-processes') ?? 2),
        profileDir: argValue('--profile'),
      });
  console.log(JSON.stringify(result, null, 2));
  process.exit(0);
}
