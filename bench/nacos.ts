/**
 * The Nacos adapter on one peer (docs/nacos.md):
 * - `instance/list` of a 1,000-instance service, rounds against a bare node:http server sending
 *   the same bytes, interleaved (the figure is the ratio of requests per second);
 * - 1,000 UDP subscribers of one (small) service, as npm `nacos` subscribes: a change registered
 *   through /v1 and the time until each subscriber has its push (p50, p99), each ack sent back;
 *   and the peer's CPU per change with those subscribers against the same change with none,
 *   and against the floor: a bare dgram process sending the same datagram to the same 1,000
 *   sockets (taking their acks), which is the least any push of a change can cost;
 * - the same with 1,000 Nacos 2.x gRPC subscriptions (each client on a connection of its own),
 *   against a bare grpc-js server writing the same NotifySubscriberRequest to 1,000 streams
 *   (bench/nacos-floors.ts).
 * `npx tsx bench/nacos.ts [--quick]` runs it alone (after `npm run build`); every loop is
 * bounded in count and time and talks to 127.0.0.1 only.
 */
import { createSocket, type Socket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { freePort } from '../test/support/fault-proxy.js';
import { startGrpcFloor, startUdpFloor, type FloorProcess } from './nacos-floors.js';
import { grpcConstructors, grpcSubscriber, type GrpcSubscriber } from './nacos-grpc-subscribers.js';
import { percentile, pool, progress, quick, round, runBounded, send, sleep, writeResult } from './lib.js';
import { startBare, startPeer, totalCpuMsOf } from './processes.js';

export interface NacosResult {
  /** When this section ran, and the machine's 1-minute load average then (the figures are noisy on a shared machine). */
  measuredAt: string;
  loadAverage: number;
  listInstances: number;
  listBodyBytes: number;
  listRounds: number;
  peerListPerSecond: number;
  bareListPerSecond: number;
  listRatio: number;
  /** The lowest and highest ratio of one round (one second each, the order alternating): the noise. */
  listRatioMin: number;
  listRatioMax: number;
  /** The peer's and the bare server's CPU per list answered, in µs (from /proc, 10 ms ticks: a mean over the rounds). */
  peerListCpuUs: number;
  bareListCpuUs: number;
  subscribers: number;
  changes: number;
  pushed: number;
  expectedPushes: number;
  pushP50Ms: number;
  pushP99Ms: number;
  cpuMsPerChangeWithSubscribers: number;
  cpuMsPerChangeWithout: number;
  cpuRatio: number;
  /** The bench process's CPU per change with its 1,000 UDP subscribers (they share the machine with the peer: the push delays include their wait for a core). */
  udpLoadGeneratorCpuMsPerChange?: number;
  /** A bare dgram process sending the same datagram to the same subscribers (and taking their acks): CPU per round. */
  udpFloorCpuMsPerChange: number;
  grpcSubscribers: number;
  grpcPushed: number;
  grpcExpectedPushes: number;
  grpcPushP50Ms: number;
  grpcPushP99Ms: number;
  grpcCpuMsPerChange: number;
  grpcCpuRatio: number;
  /** The bench process's CPU per change with its gRPC subscribers. */
  grpcLoadGeneratorCpuMsPerChange?: number;
  /** A bare grpc-js server writing the same push to as many streams: CPU per round. */
  grpcFloorCpuMsPerChange: number;
}

const BIG = 'nacos-bench-big';
const WATCHED = 'nacos-bench-watched';
const ALONE = 'nacos-bench-alone';
const GRPC_WATCHED = 'nacos-bench-grpc-watched';

/** A config file: the rate limit off (every request comes from 127.0.0.1), and room for 1,000 push targets from one address. */
function configFile(subscribers: number, grpcPort: number): string {
  const file = join(tmpdir(), `registry-bench-nacos-${process.pid}.json`);
  writeFileSync(file, JSON.stringify({ limits: { rateLimitPerSecond: 0 }, nacos: { grpcPort, pushTargetsPerSourceMax: subscribers + 10, pushTargetsMax: subscribers + 10 } }));
  return file;
}

async function register(url: string, service: string, count: number, from = 0): Promise<void> {
  const target = pool(url, 16);
  const { errors } = await runBounded(count, 16, 120_000, async (i) => {
    const n = from + i;
    const answer = await send(target, { method: 'POST', path: '/v1/instances', body: { service, host: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`, port: 8080, leaseDurationMs: 600_000, metadata: { version: '1.4.2', zone: 'a' } } });
    if (answer.status >= 300) throw new Error(answer.body);
  });
  await target.close();
  if (errors > 0) throw new Error(`${errors} registrations failed`);
}

/**
 * Requests per second of `path` on `url` over `ms`, 32 in flight, and the server's CPU per
 * request. Each answer is read to its end (its bytes counted): undici's `body.dump()` gives up
 * on a body over 128 KB and destroys the socket, which made the 356 KB list look slower than
 * it is (a new connection per request, both sides).
 */
async function rate(url: string, path: string, ms: number, pid: number, expectedBytes: number): Promise<{ perSecond: number; cpuUsPerRequest: number }> {
  const target = pool(url, 32);
  const cpuBefore = totalCpuMsOf(pid);
  const { done, elapsedMs, errors } = await runBounded(1_000_000, 32, ms, async () => {
    const answer = await target.request({ method: 'GET', path });
    let bytes = 0;
    for await (const chunk of answer.body) bytes += (chunk as Buffer).length;
    if (answer.statusCode !== 200 || bytes !== expectedBytes) throw new Error(`answered ${answer.statusCode} with ${bytes} bytes`);
  });
  const cpuMs = totalCpuMsOf(pid) - cpuBefore;
  await target.close();
  if (errors > 0) throw new Error(`${errors} lists of ${url}${path} failed`);
  return { perSecond: (done / elapsedMs) * 1_000, cpuUsPerRequest: (cpuMs * 1_000) / Math.max(done, 1) };
}

/** One npm-nacos-like subscriber: a UDP socket that acks every push and keeps when each came. */
interface Subscriber {
  socket: Socket;
  port: number;
  received: Map<number, number>;
  /** Datagrams received, and the last of them as it came. */
  messages: number;
  last: Buffer | null;
}

async function subscriber(): Promise<Subscriber> {
  const socket = createSocket('udp4');
  const received = new Map<number, number>();
  const sub: Subscriber = { socket, port: 0, received, messages: 0, last: null };
  socket.on('message', (message, remote) => {
    const at = performance.now();
    sub.messages += 1;
    sub.last = message;
    const bytes = message[0] === 0x1f && message[1] === 0x8b ? gunzipSync(message) : message;
    const packet = JSON.parse(bytes.toString()) as { type: string; data: string; lastRefTime: number };
    const hosts = (JSON.parse(packet.data) as { hosts: unknown[] }).hosts.length;
    if (!received.has(hosts)) received.set(hosts, at);
    socket.send(JSON.stringify({ type: 'push-ack', lastRefTime: packet.lastRefTime, data: '' }), remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  sub.port = socket.address().port;
  return sub;
}

/** What `changes` registrations to a watched service measured: each subscriber's push delay, and the peer's CPU per change. */
interface ChangesMeasured {
  latencies: number[];
  pushed: number;
  cpuMsPerChange: number;
  /** The bench process's own CPU per change: its subscribers receiving, decoding and answering each push. */
  loadGeneratorCpuMsPerChange: number;
}

/**
 * `changes` registrations to `service` (which has `hostsBefore` instances), one at a time: the
 * time from each until each subscriber had the push with the new host count (5 s at most per
 * change), and the peer's CPU per change, settling time included.
 */
async function measureChanges(url: string, pid: number, service: string, hostsBefore: number, changes: number, from: number, subs: readonly { received: Map<number, number> }[]): Promise<ChangesMeasured> {
  const latencies: number[] = [];
  let pushed = 0;
  const cpuBefore = totalCpuMsOf(pid);
  const ownBefore = process.cpuUsage();
  for (let change = 0; change < changes; change++) {
    const hosts = hostsBefore + 1 + change;
    const sentAt = performance.now();
    await register(url, service, 1, from + change);
    const deadline = performance.now() + 5_000;
    while (performance.now() < deadline && subs.some((sub) => !sub.received.has(hosts))) await sleep(5);
    await sleep(50);
    for (const sub of subs) {
      const at = sub.received.get(hosts);
      if (at !== undefined) {
        latencies.push(at - sentAt);
        pushed += 1;
      }
    }
  }
  // Includes the retries a lost ack would cause; with every ack sent, none.
  await sleep(500);
  const own = process.cpuUsage(ownBefore);
  return { latencies, pushed, cpuMsPerChange: (totalCpuMsOf(pid) - cpuBefore) / changes, loadGeneratorCpuMsPerChange: (own.user + own.system) / 1_000 / changes };
}

/** `rounds` rounds of a floor process, each waited for until every subscriber has it (5 s at most), given the same settling time as a change: CPU per round. */
async function floorRounds(floor: FloorProcess, rounds: number, subs: readonly { messages: number }[]): Promise<number> {
  const cpuBefore = totalCpuMsOf(floor.pid);
  for (let i = 0; i < rounds; i++) {
    const before = subs.map((sub) => sub.messages);
    await floor.round();
    const deadline = performance.now() + 5_000;
    while (performance.now() < deadline && subs.some((sub, n) => sub.messages <= before[n]!)) await sleep(5);
    await sleep(50);
  }
  await sleep(500);
  return (totalCpuMsOf(floor.pid) - cpuBefore) / rounds;
}

export async function benchNacos(options: { quick: boolean }): Promise<NacosResult> {
  const subscribers = options.quick ? 200 : 1_000;
  const changes = options.quick ? 5 : 20;
  const rounds = options.quick ? 2 : 6;
  const startedAt = new Date().toISOString();
  const startLoad = loadavg()[0]!;
  const nacosPort = await freePort();
  const grpcPort = await freePort();
  const peer = await startPeer('nacos-peer', { pinned: false, logLevel: 'warn', unlimited: false, extraArgs: ['--config', configFile(subscribers, grpcPort), '--nacos-port', String(nacosPort)] });
  const nacos = `http://127.0.0.1:${nacosPort}`;
  try {
    // 1. instance/list of a 1,000-instance service against the same bytes from a bare server.
    progress('nacos: registering 1,000 instances');
    await register(peer.url, BIG, 1_000);
    const listPath = `/nacos/v1/ns/instance/list?serviceName=DEFAULT_GROUP%40%40${BIG}&clusters=&healthyOnly=false`;
    const sample = await fetch(`${nacos}${listPath}`);
    const body = Buffer.from(await sample.arrayBuffer());
    const listInstances = (JSON.parse(body.toString()) as { hosts: unknown[] }).hosts.length;
    const file = join(tmpdir(), `nacos-bench-list-${process.pid}.json`);
    writeFileSync(file, body);
    const bare = await startBare(file, false);
    let peerTotal = 0;
    let bareTotal = 0;
    let peerCpuUs = 0;
    let bareCpuUs = 0;
    const roundRatios: number[] = [];
    try {
      // A warm-up round each, not counted: the JIT, and the peer's own work after 1,000 registrations.
      await rate(nacos, listPath, 1_000, peer.pid, body.length);
      await rate(bare.url, '/', 1_000, bare.pid, body.length);
      for (let round = 0; round < rounds; round++) {
        // The order alternates, so that neither server always runs right after the other.
        const peerFirst = round % 2 === 0;
        const first = peerFirst ? await rate(nacos, listPath, 1_000, peer.pid, body.length) : await rate(bare.url, '/', 1_000, bare.pid, body.length);
        const second = peerFirst ? await rate(bare.url, '/', 1_000, bare.pid, body.length) : await rate(nacos, listPath, 1_000, peer.pid, body.length);
        const [peerRound, bareRound] = peerFirst ? [first, second] : [second, first];
        peerTotal += peerRound.perSecond;
        bareTotal += bareRound.perSecond;
        peerCpuUs += peerRound.cpuUsPerRequest;
        bareCpuUs += bareRound.cpuUsPerRequest;
        roundRatios.push(peerRound.perSecond / bareRound.perSecond);
      }
    } finally {
      await bare.stop();
    }
    const peerListPerSecond = peerTotal / rounds;
    const bareListPerSecond = bareTotal / rounds;
    progress(`nacos: instance/list ${round(peerListPerSecond)}/s, bare ${round(bareListPerSecond)}/s`);

    // 2. The CPU of a change with no subscriber (another service).
    await register(peer.url, ALONE, 10);
    await sleep(500);
    // One change at a time, as with the subscribers below, each given the same settling time.
    let cpuBefore = totalCpuMsOf(peer.pid);
    for (let change = 0; change < changes; change++) {
      await register(peer.url, ALONE, 1, 1_000 + change);
      await sleep(50);
    }
    await sleep(500);
    const cpuMsPerChangeWithout = (totalCpuMsOf(peer.pid) - cpuBefore) / changes;

    // 3. Subscribers of a 10-instance service; then `changes` registrations, one at a time.
    await register(peer.url, WATCHED, 10);
    progress(`nacos: ${subscribers} UDP subscribers`);
    const subs: Subscriber[] = [];
    for (let i = 0; i < subscribers; i++) subs.push(await subscriber());
    const listOf = (port: number) => `/nacos/v1/ns/instance/list?serviceName=DEFAULT_GROUP%40%40${WATCHED}&clusters=&udpPort=${port}&clientIP=127.0.0.1`;
    const target = pool(nacos, 16);
    await runBounded(subscribers, 16, 60_000, async (i) => {
      const answer = await target.request({ method: 'GET', path: listOf(subs[i]!.port) });
      await answer.body.arrayBuffer();
    });
    await target.close();
    await sleep(500);
    const udp = await measureChanges(peer.url, peer.pid, WATCHED, 10, changes, 2_000, subs);
    // The floor: the last datagram the peer pushed, sent by a bare process to the same sockets.
    progress('nacos: UDP floor (bare dgram process)');
    const udpFloor = await startUdpFloor(subs.find((sub) => sub.last !== null)?.last ?? Buffer.from('{}'), subs.map((sub) => sub.port));
    let udpFloorCpuMsPerChange: number;
    try {
      udpFloorCpuMsPerChange = await floorRounds(udpFloor, changes, subs);
    } finally {
      await udpFloor.stop();
    }
    for (const sub of subs) sub.socket.close();

    // 4. gRPC subscriptions of another 10-instance service, each on a connection of its own.
    await register(peer.url, GRPC_WATCHED, 10);
    progress(`nacos: ${subscribers} gRPC subscribers`);
    const constructors = grpcConstructors();
    const grpcSubs: GrpcSubscriber[] = [];
    let grpc: ChangesMeasured;
    let grpcFloorCpuMsPerChange: number;
    try {
      for (let i = 0; i < subscribers; i++) grpcSubs.push(await grpcSubscriber(constructors, grpcPort, GRPC_WATCHED));
      await sleep(500);
      grpc = await measureChanges(peer.url, peer.pid, GRPC_WATCHED, 10, changes, 3_000, grpcSubs);
    } finally {
      for (const sub of grpcSubs) sub.close();
    }
    progress('nacos: gRPC floor (bare grpc-js server)');
    // The floor writes the last push the peer wrote (its JSON), to as many streams.
    const lastPush = grpcSubs.find((sub) => sub.lastJson !== null)?.lastJson ?? Buffer.from('{}');
    const grpcFloor = await startGrpcFloor(lastPush);
    const floorSubs: GrpcSubscriber[] = [];
    try {
      for (let i = 0; i < subscribers; i++) floorSubs.push(await grpcSubscriber(constructors, grpcFloor.port, null));
      await sleep(500);
      grpcFloorCpuMsPerChange = await floorRounds(grpcFloor, changes, floorSubs);
    } finally {
      for (const sub of floorSubs) sub.close();
      await grpcFloor.stop();
    }
    const result: NacosResult = {
      measuredAt: startedAt,
      loadAverage: round(startLoad, 1),
      listInstances,
      listBodyBytes: body.length,
      listRounds: rounds,
      peerListPerSecond: round(peerListPerSecond),
      bareListPerSecond: round(bareListPerSecond),
      listRatio: round(peerListPerSecond / bareListPerSecond, 2),
      listRatioMin: round(Math.min(...roundRatios), 2),
      listRatioMax: round(Math.max(...roundRatios), 2),
      peerListCpuUs: round(peerCpuUs / rounds, 1),
      bareListCpuUs: round(bareCpuUs / rounds, 1),
      subscribers,
      changes,
      pushed: udp.pushed,
      expectedPushes: subscribers * changes,
      pushP50Ms: round(percentile(udp.latencies, 0.5)),
      pushP99Ms: round(percentile(udp.latencies, 0.99)),
      cpuMsPerChangeWithSubscribers: round(udp.cpuMsPerChange),
      cpuMsPerChangeWithout: round(cpuMsPerChangeWithout),
      cpuRatio: round(udp.cpuMsPerChange / Math.max(cpuMsPerChangeWithout, 0.1), 1),
      udpLoadGeneratorCpuMsPerChange: round(udp.loadGeneratorCpuMsPerChange),
      udpFloorCpuMsPerChange: round(udpFloorCpuMsPerChange),
      grpcSubscribers: subscribers,
      grpcPushed: grpc.pushed,
      grpcExpectedPushes: subscribers * changes,
      grpcPushP50Ms: round(percentile(grpc.latencies, 0.5)),
      grpcPushP99Ms: round(percentile(grpc.latencies, 0.99)),
      grpcCpuMsPerChange: round(grpc.cpuMsPerChange),
      grpcCpuRatio: round(grpc.cpuMsPerChange / Math.max(cpuMsPerChangeWithout, 0.1), 1),
      grpcLoadGeneratorCpuMsPerChange: round(grpc.loadGeneratorCpuMsPerChange),
      grpcFloorCpuMsPerChange: round(grpcFloorCpuMsPerChange),
    };
    return result;
  } finally {
    await peer.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchNacos({ quick });
  console.log(JSON.stringify(result, null, 2));
  progress(`wrote ${writeResult('nacos', result)}`);
}
