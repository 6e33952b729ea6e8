/**
 * Consul blocking queries on one peer (docs/consul.md): 1,000 watchers held on one service
 * (`GET /v1/health/service/NAME?passing&index=N&wait=5m`, the query brpc, consul-template and
 * Spring Cloud Consul make), then writes to that service. Measures:
 * - wake-up latency: from sending a register (through the Consul API) to each watcher getting
 *   its answer with the new index; the reference, in the same run, is the register's own
 *   round trip;
 * - the cost of holding the watchers: the peer's RSS with them held minus before, and its CPU
 *   over an idle window with them held (a blocking query costs no CPU while it waits);
 * - per-service wake-ups: writes to another service must wake none of them (consul#3890);
 * - the floor, right after the peer under the same watchers and writes: a bare node:http server
 *   that holds the long polls and writes one body per change to all of them
 *   (bench/consul-reference-server.ts), its CPU per waking write and its wake-up latency.
 * `npx tsx bench/consul.ts [--quick] [--filtered] [--main PATH/dist/main.js]` runs it alone
 * (after `npm run build`); `--main` runs another build's peer (a checkout of an older commit) to
 * compare; `--filtered` makes every watcher ask `?passing&tag=bench` (every instance has the
 * tag: the same answer, through the filtered path) instead of `?passing`.
 */
import { setMaxListeners } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { freePort } from '../test/support/fault-proxy.js';
import { percentile, progress, quick, round, sleep, writeResult } from './lib.js';
import { startPeer, startServer, totalCpuMsOf as cpuMs } from './processes.js';

/** What one server's wakes cost: the same watchers and writes, against the peer or the reference. */
export interface WakeFigures {
  /** Register sent to a watcher's answer, over every (write, watcher) pair. */
  wakeP50Ms: number;
  wakeP99Ms: number;
  /** Register sent to the last watcher's answer, per write. */
  allWokenP99Ms: number;
  woken: number;
  expected: number;
  /** Answers to the watchers while only another service changed (0 expected). */
  spuriousWakeups: number;
  /** The register's own round trip. */
  writeAckP50Ms: number;
  writeAckP99Ms: number;
  rssBeforeMb: number;
  rssWithWatchersMb: number;
  /** The server's CPU (user + system) over an idle window with the watchers held, in percent of one core. */
  idleCpuPercentWithWatchers: number;
  idleCpuPercentBefore: number;
  /** The server's CPU per write that wakes every watcher (and their re-arm), in ms. */
  cpuMsPerWakeAll: number;
  /** The bytes of one woken watcher's answer (its body), at the last write. */
  answerBytes: number;
}

export interface ConsulResult extends Omit<WakeFigures, 'answerBytes'> {
  watchers: number;
  writes: number;
  /** RSS per held watcher, in KB. */
  rssPerWatcherKb: number;
  /** Absent in runs from before the reference. */
  answerBytes?: number;
  /**
   * The same watchers and writes against bench/consul-reference-server.ts (bare node:http, one
   * body per change written to every held response), right after the peer: the floor. Absent
   * in runs from before it.
   */
  reference?: Pick<WakeFigures, 'wakeP50Ms' | 'wakeP99Ms' | 'allWokenP99Ms' | 'woken' | 'cpuMsPerWakeAll' | 'answerBytes'>;
  /** The peer's CPU per waking write over the reference's. */
  cpuRatio?: number;
}

const WATCHED = 'consul-bench';
const OTHER = 'consul-other';
/** Every instance's tag: what `--filtered` watchers ask for (`&tag=`), a filtered read of the same instances. */
const TAG = 'bench';
const WRITE_SPACING_MS = 300;
const IDLE_WINDOW_MS = 3_000;
const outDir = fileURLToPath(new URL('./out/', import.meta.url));

async function idleCpuPercent(pid: number): Promise<number> {
  const before = cpuMs(pid);
  await sleep(IDLE_WINDOW_MS);
  return round(((cpuMs(pid) - before) / IDLE_WINDOW_MS) * 100, 2);
}

interface WakeTarget {
  base: string;
  pid: number;
  rssMb(): number;
}

/**
 * Holds `watchers` blocking queries on WATCHED at `target`, writes to OTHER (no watcher may
 * wake) and then `writes` registers to WATCHED, and measures each watcher's wake and the
 * server's CPU per write. Each watcher reads its whole answer (`body.json()`, not `dump()`,
 * which gives up on a body over 128 KB) and re-arms on the index it got, as a Consul client does.
 */
async function measureWakes(target: WakeTarget, watchers: number, writes: number, label: string, query: string): Promise<WakeFigures> {
  const { base } = target;
  const agent = new Agent({ keepAliveTimeout: 60_000, connections: watchers + 10 });
  const aborter = new AbortController();
  // Every watcher's request listens on this one signal (and undici adds its own listener).
  setMaxListeners(watchers * 2 + 10, aborter.signal);
  const register = async (service: string, id: string, port: number): Promise<number> => {
    const t0 = performance.now();
    const response = await request(`${base}/v1/agent/service/register`, {
      method: 'PUT',
      dispatcher: agent,
      body: JSON.stringify({ Name: service, ID: id, Address: '10.0.0.9', Port: port, Tags: [TAG], Check: { TTL: '10m', Status: 'passing' } }),
    });
    // The answer to a register is empty: dump() reads it whole.
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`register answered ${response.statusCode}`);
    return performance.now() - t0;
  };
  try {
    await register(WATCHED, 'seed', 1);
    await register(OTHER, 'other-seed', 1);
    await sleep(500);
    const rssBeforeMb = target.rssMb();
    const idleCpuPercentBefore = await idleCpuPercent(target.pid);
    progress(`consul (${label}): ${watchers} blocking queries on ${WATCHED}, ${writes} registers ${WRITE_SPACING_MS} ms apart`);

    /** When the write that produced each index was sent (by the id it registered). */
    let writeSentMs = 0;
    let writeId = '';
    let measuring = false;
    let spurious = 0;
    let answerBytes = 0;
    const arrivals = new Map<string, number[]>();
    let armed = 0;
    const watch = async () => {
      let index = '0';
      let counted = false;
      while (!aborter.signal.aborted) {
        const response = await request(`${base}/v1/health/service/${WATCHED}?${query}&index=${index}&wait=5m`, { dispatcher: agent, signal: aborter.signal });
        const text = await response.body.text();
        const body = JSON.parse(text) as { Service: { ID: string } }[];
        const now = performance.now();
        const next = String(response.headers['x-consul-index']);
        if (index !== '0') {
          if (!measuring) spurious += 1;
          else if (body.some((entry) => entry.Service.ID === writeId)) {
            arrivals.get(writeId)?.push(now - writeSentMs);
            answerBytes = Buffer.byteLength(text);
          }
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
    const rssWithWatchersMb = target.rssMb();
    const idleCpuPercentWithWatchers = await idleCpuPercent(target.pid);

    // Writes to another service: no watcher of this one may wake.
    for (let w = 0; w < 5; w++) {
      await register(OTHER, `other-${w}`, 100 + w);
      await sleep(100);
    }
    await sleep(500);
    const spuriousWakeups = spurious;

    measuring = true;
    const acks: number[] = [];
    const cpuBefore = cpuMs(target.pid);
    for (let w = 0; w < writes; w++) {
      writeId = `w-${w}`;
      arrivals.set(writeId, []);
      writeSentMs = performance.now();
      acks.push(await register(WATCHED, writeId, 1_000 + w));
      const deadline = performance.now() + WRITE_SPACING_MS * 10;
      while (arrivals.get(writeId)!.length < watchers && performance.now() < deadline) await sleep(10);
      await sleep(WRITE_SPACING_MS);
    }
    const cpuMsPerWakeAll = round((cpuMs(target.pid) - cpuBefore - (writes * WRITE_SPACING_MS * idleCpuPercentWithWatchers) / 100) / writes, 2);
    const all = [...arrivals.values()].flat();
    const lastPerWrite = [...arrivals.values()].filter((list) => list.length === watchers).map((list) => Math.max(...list));
    const figures: WakeFigures = {
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
      idleCpuPercentWithWatchers,
      idleCpuPercentBefore,
      cpuMsPerWakeAll,
      answerBytes,
    };
    progress(`consul (${label}): ${JSON.stringify(figures)}`);
    aborter.abort();
    await Promise.all(loops);
    return figures;
  } finally {
    aborter.abort();
    await agent.close().catch(() => undefined);
  }
}

/** One health entry as the peer answers it (the seed's), for the reference server to copy. */
async function captureTemplate(base: string): Promise<string> {
  const response = await request(`${base}/v1/health/service/${WATCHED}?passing`);
  const entries = (await response.body.json()) as { Service: { ID: string } }[];
  const seed = entries.find((entry) => entry.Service.ID === 'seed');
  if (response.statusCode !== 200 || !seed) throw new Error(`no seed entry in the peer's answer (${response.statusCode})`);
  mkdirSync(outDir, { recursive: true });
  const file = `${outDir}consul-template.json`;
  writeFileSync(file, JSON.stringify(seed));
  return file;
}

/**
 * Starts a peer with its Consul API and measures its blocking queries, then the bare reference
 * server (bench/consul-reference-server.ts) under the same watchers and writes, back to back.
 */
export async function benchConsul(options: { quick: boolean; watchers?: number; main?: string; filtered?: boolean }): Promise<ConsulResult> {
  const query = options.filtered ? `passing&tag=${TAG}` : 'passing';
  const watchers = options.watchers ?? 1_000;
  const writes = options.quick ? 10 : 30;
  const consulPort = await freePort();
  const peer = await startPeer('consul-peer', { pinned: false, logLevel: 'warn', extraArgs: ['--consul-port', String(consulPort)], ...(options.main ? { main: options.main } : {}) });
  const base = `http://127.0.0.1:${consulPort}`;
  let figures: WakeFigures;
  let templateFile: string;
  try {
    figures = await measureWakes({ base, pid: peer.pid, rssMb: () => peer.rssMb() }, watchers, writes, 'peer', query);
    templateFile = await captureTemplate(base);
  } finally {
    await peer.stop();
  }
  const referencePort = await freePort();
  const server = await startServer({
    name: 'consul-reference',
    command: process.execPath,
    args: ['--import', 'tsx', 'bench/consul-reference-server.ts', String(referencePort), templateFile],
    pinned: false,
    healthPath: '/healthz',
    port: referencePort,
  });
  let reference: WakeFigures;
  try {
    reference = await measureWakes({ base: server.url, pid: server.pid, rssMb: () => server.rssMb() }, watchers, writes, 'bare node:http reference', query);
  } finally {
    await server.stop();
  }
  const { answerBytes: _answerBytes, ...peerFigures } = figures;
  return {
    watchers,
    writes,
    ...peerFigures,
    rssPerWatcherKb: round(((figures.rssWithWatchersMb - figures.rssBeforeMb) * 1024) / watchers, 2),
    answerBytes: figures.answerBytes,
    reference: {
      wakeP50Ms: reference.wakeP50Ms,
      wakeP99Ms: reference.wakeP99Ms,
      allWokenP99Ms: reference.allWokenP99Ms,
      woken: reference.woken,
      cpuMsPerWakeAll: reference.cpuMsPerWakeAll,
      answerBytes: reference.answerBytes,
    },
    cpuRatio: reference.cpuMsPerWakeAll > 0 ? round(figures.cpuMsPerWakeAll / reference.cpuMsPerWakeAll, 2) : 0,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const at = process.argv.indexOf('--main');
  const result = await benchConsul({ quick, filtered: process.argv.includes('--filtered'), ...(at > 0 && process.argv[at + 1] ? { main: process.argv[at + 1] } : {}) });
  progress(`written to ${writeResult('consul', result)}`);
}
