/**
 * Consul blocking queries on one peer (docs/consul.md): 1,000 watchers held on one service
 * (`GET /v1/health/service/NAME?passing&index=N&wait=5m`, the query brpc, consul-template and
 * Spring Cloud Consul make), then writes to that service. Measures:
 * - wake-up latency: from sending a register (through the Consul API) to each watcher getting
 *   its answer with the new index; the reference, in the same run, is the register's own
 *   round trip;
 * - the cost of holding the watchers: the peer's RSS with them held minus before, and its CPU
 *   over an idle window with them held (a blocking query costs no CPU while it waits);
 * - per-service wake-ups: writes to another service must wake none of them (consul#3890).
 * `npx tsx bench/consul.ts [--quick] [--main PATH/dist/main.js]` runs it alone (after `npm run
 * build`); `--main` runs another build's peer (a checkout of an older commit) to compare.
 */
import { setMaxListeners } from 'node:events';
import { Agent, request } from 'undici';
import { freePort } from '../test/support/fault-proxy.js';
import { percentile, progress, quick, round, sleep, writeResult } from './lib.js';
import { startPeer, totalCpuMsOf as cpuMs } from './processes.js';

export interface ConsulResult {
  watchers: number;
  writes: number;
  /** Register sent to a watcher's answer, over every (write, watcher) pair. */
  wakeP50Ms: number;
  wakeP99Ms: number;
  /** Register sent to the last watcher's answer, per write. */
  allWokenP99Ms: number;
  woken: number;
  expected: number;
  /** Answers to the watchers while only another service changed (0 expected). */
  spuriousWakeups: number;
  /** The reference: the register's own round trip. */
  writeAckP50Ms: number;
  writeAckP99Ms: number;
  rssBeforeMb: number;
  rssWithWatchersMb: number;
  /** RSS per held watcher, in KB. */
  rssPerWatcherKb: number;
  /** The peer's CPU (user + system) over an idle window with the watchers held, in percent of one core. */
  idleCpuPercentWithWatchers: number;
  idleCpuPercentBefore: number;
  /** The peer's CPU per write that wakes every watcher (and their re-arm), in ms. */
  cpuMsPerWakeAll: number;
}

const WATCHED = 'consul-bench';
const OTHER = 'consul-other';
const WRITE_SPACING_MS = 300;
const IDLE_WINDOW_MS = 3_000;

async function idleCpuPercent(pid: number): Promise<number> {
  const before = cpuMs(pid);
  await sleep(IDLE_WINDOW_MS);
  return round(((cpuMs(pid) - before) / IDLE_WINDOW_MS) * 100, 2);
}

/** Starts a peer with its Consul API and measures its blocking queries. */
export async function benchConsul(options: { quick: boolean; watchers?: number; main?: string }): Promise<ConsulResult> {
  const consulPort = await freePort();
  const peer = await startPeer('consul-peer', { pinned: false, logLevel: 'warn', extraArgs: ['--consul-port', String(consulPort)], ...(options.main ? { main: options.main } : {}) });
  const watchers = options.watchers ?? 1_000;
  const writes = options.quick ? 10 : 30;
  const base = `http://127.0.0.1:${consulPort}`;
  const agent = new Agent({ keepAliveTimeout: 60_000, connections: watchers + 10 });
  const aborter = new AbortController();
  // Every watcher's request listens on this one signal (and undici adds its own listener).
  setMaxListeners(watchers * 2 + 10, aborter.signal);
  const register = async (service: string, id: string, port: number): Promise<number> => {
    const t0 = performance.now();
    const response = await request(`${base}/v1/agent/service/register`, {
      method: 'PUT',
      dispatcher: agent,
      body: JSON.stringify({ Name: service, ID: id, Address: '10.0.0.9', Port: port, Check: { TTL: '10m', Status: 'passing' } }),
    });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`register answered ${response.statusCode}`);
    return performance.now() - t0;
  };
  try {
    await register(WATCHED, 'seed', 1);
    await register(OTHER, 'other-seed', 1);
    await sleep(500);
    const rssBeforeMb = peer.rssMb();
    const idleCpuPercentBefore = await idleCpuPercent(peer.pid);
    progress(`consul: ${watchers} blocking queries on ${WATCHED}, ${writes} registers ${WRITE_SPACING_MS} ms apart`);

    /** When the write that produced each index was sent (by the id it registered). */
    let writeSentMs = 0;
    let writeId = '';
    let measuring = false;
    let spurious = 0;
    const arrivals = new Map<string, number[]>();
    let armed = 0;
    const watch = async () => {
      let index = '0';
      let counted = false;
      while (!aborter.signal.aborted) {
        const response = await request(`${base}/v1/health/service/${WATCHED}?passing&index=${index}&wait=5m`, { dispatcher: agent, signal: aborter.signal });
        const body = (await response.body.json()) as { Service: { ID: string } }[];
        const now = performance.now();
        const next = String(response.headers['x-consul-index']);
        if (index !== '0') {
          if (!measuring) spurious += 1;
          else if (body.some((entry) => entry.Service.ID === writeId)) arrivals.get(writeId)?.push(now - writeSentMs);
        }
        index = next;
        if (!counted) {
          counted = true;
          armed += 1;
        }
      }
    };
    const loops = Array.from({ length: watchers }, () => watch().catch(() => undefined));
    const armDeadline = performance.now() + 30_000;
    while (armed < watchers && performance.now() < armDeadline) await sleep(50);
    if (armed < watchers) throw new Error(`only ${armed} of ${watchers} watchers got their first answer within 30 s`);
    await sleep(500);
    const rssWithWatchersMb = peer.rssMb();
    const idleCpuPercentWithWatchers = await idleCpuPercent(peer.pid);

    // Writes to another service: no watcher of this one may wake.
    for (let w = 0; w < 5; w++) {
      await register(OTHER, `other-${w}`, 100 + w);
      await sleep(100);
    }
    await sleep(500);
    const spuriousWakeups = spurious;

    measuring = true;
    const acks: number[] = [];
    const cpuBefore = cpuMs(peer.pid);
    for (let w = 0; w < writes; w++) {
      writeId = `w-${w}`;
      arrivals.set(writeId, []);
      writeSentMs = performance.now();
      acks.push(await register(WATCHED, writeId, 1_000 + w));
      const deadline = performance.now() + WRITE_SPACING_MS * 10;
      while (arrivals.get(writeId)!.length < watchers && performance.now() < deadline) await sleep(10);
      await sleep(WRITE_SPACING_MS);
    }
    const cpuMsPerWakeAll = round((cpuMs(peer.pid) - cpuBefore - (writes * WRITE_SPACING_MS * idleCpuPercentWithWatchers) / 100) / writes, 2);
    const all = [...arrivals.values()].flat();
    const lastPerWrite = [...arrivals.values()].filter((list) => list.length === watchers).map((list) => Math.max(...list));
    const result: ConsulResult = {
      watchers,
      writes,
      wakeP50Ms: round(percentile(all, 0.5), 1),
      wakeP99Ms: round(percentile(all, 0.99), 1),
      allWokenP99Ms: round(percentile(lastPerWrite, 0.99), 1),
      woken: all.length,
      expected: writes * watchers,
      spuriousWakeups,
      writeAckP50Ms: round(percentile(acks, 0.5), 2),
      writeAckP99Ms: round(percentile(acks, 0.99), 2),
      rssBeforeMb: round(rssBeforeMb, 1),
      rssWithWatchersMb: round(rssWithWatchersMb, 1),
      rssPerWatcherKb: round(((rssWithWatchersMb - rssBeforeMb) * 1024) / watchers, 2),
      idleCpuPercentWithWatchers,
      idleCpuPercentBefore,
      cpuMsPerWakeAll,
    };
    progress(`consul: ${JSON.stringify(result)}`);
    aborter.abort();
    await Promise.all(loops);
    return result;
  } finally {
    aborter.abort();
    await agent.close().catch(() => undefined);
    await peer.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const at = process.argv.indexOf('--main');
  const result = await benchConsul({ quick, ...(at > 0 && process.argv[at + 1] ? { main: process.argv[at + 1] } : {}) });
  progress(`written to ${writeResult('consul', result)}`);
}
