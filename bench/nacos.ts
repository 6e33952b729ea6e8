/**
 * The Nacos adapter on one peer (docs/nacos.md):
 * - `instance/list` of a 1,000-instance service, rounds against a bare node:http server sending
 *   the same bytes, interleaved (the figure is the ratio of requests per second);
 * - 1,000 UDP subscribers of one (small) service, as npm `nacos` subscribes: a change registered
 *   through /v1 and the time until each subscriber has its push (p50, p99), each ack sent back;
 *   and the peer's CPU per change with those subscribers against the same change with none.
 * `npx tsx bench/nacos.ts [--quick]` runs it alone (after `npm run build`); every loop is
 * bounded in count and time and talks to 127.0.0.1 only.
 */
import { createSocket, type Socket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { freePort } from '../test/support/fault-proxy.js';
import { percentile, pool, progress, quick, round, runBounded, send, sleep, writeResult } from './lib.js';
import { startBare, startPeer, totalCpuMsOf } from './processes.js';

export interface NacosResult {
  listInstances: number;
  listBodyBytes: number;
  listRounds: number;
  peerListPerSecond: number;
  bareListPerSecond: number;
  listRatio: number;
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
}

const BIG = 'nacos-bench-big';
const WATCHED = 'nacos-bench-watched';
const ALONE = 'nacos-bench-alone';

/** A config file: the rate limit off (every request comes from 127.0.0.1), and room for 1,000 push targets from one address. */
function configFile(subscribers: number): string {
  const file = join(tmpdir(), `registry-bench-nacos-${process.pid}.json`);
  writeFileSync(file, JSON.stringify({ limits: { rateLimitPerSecond: 0 }, nacos: { pushTargetsPerSourceMax: subscribers + 10, pushTargetsMax: subscribers + 10 } }));
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
}

async function subscriber(): Promise<Subscriber> {
  const socket = createSocket('udp4');
  const received = new Map<number, number>();
  socket.on('message', (message, remote) => {
    const at = performance.now();
    const bytes = message[0] === 0x1f && message[1] === 0x8b ? gunzipSync(message) : message;
    const packet = JSON.parse(bytes.toString()) as { type: string; data: string; lastRefTime: number };
    const hosts = (JSON.parse(packet.data) as { hosts: unknown[] }).hosts.length;
    if (!received.has(hosts)) received.set(hosts, at);
    socket.send(JSON.stringify({ type: 'push-ack', lastRefTime: packet.lastRefTime, data: '' }), remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, port: socket.address().port, received };
}

export async function benchNacos(options: { quick: boolean }): Promise<NacosResult> {
  const subscribers = options.quick ? 200 : 1_000;
  const changes = options.quick ? 5 : 20;
  const rounds = options.quick ? 2 : 6;
  let nacosPort = await freePort();
  while (nacosPort > 64_000) nacosPort = await freePort();
  const peer = await startPeer('nacos-peer', { pinned: false, logLevel: 'warn', unlimited: false, extraArgs: ['--config', configFile(subscribers), '--nacos-port', String(nacosPort)] });
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
    try {
      for (let round = 0; round < rounds; round++) {
        const peerRound = await rate(nacos, listPath, 1_000, peer.pid, body.length);
        const bareRound = await rate(bare.url, '/', 1_000, bare.pid, body.length);
        peerTotal += peerRound.perSecond;
        bareTotal += bareRound.perSecond;
        peerCpuUs += peerRound.cpuUsPerRequest;
        bareCpuUs += bareRound.cpuUsPerRequest;
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
    const latencies: number[] = [];
    let pushed = 0;
    cpuBefore = totalCpuMsOf(peer.pid);
    for (let change = 0; change < changes; change++) {
      const hosts = 11 + change;
      const sentAt = performance.now();
      await register(peer.url, WATCHED, 1, 2_000 + change);
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
    const cpuMsPerChangeWithSubscribers = (totalCpuMsOf(peer.pid) - cpuBefore) / changes;
    for (const sub of subs) sub.socket.close();
    const result: NacosResult = {
      listInstances,
      listBodyBytes: body.length,
      listRounds: rounds,
      peerListPerSecond: round(peerListPerSecond),
      bareListPerSecond: round(bareListPerSecond),
      listRatio: round(peerListPerSecond / bareListPerSecond, 2),
      peerListCpuUs: round(peerCpuUs / rounds, 1),
      bareListCpuUs: round(bareCpuUs / rounds, 1),
      subscribers,
      changes,
      pushed,
      expectedPushes: subscribers * changes,
      pushP50Ms: round(percentile(latencies, 0.5)),
      pushP99Ms: round(percentile(latencies, 0.99)),
      cpuMsPerChangeWithSubscribers: round(cpuMsPerChangeWithSubscribers),
      cpuMsPerChangeWithout: round(cpuMsPerChangeWithout),
      cpuRatio: round(cpuMsPerChangeWithSubscribers / Math.max(cpuMsPerChangeWithout, 0.1), 1),
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
