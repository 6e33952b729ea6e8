/**
 * Anti-entropy between two peers of N instances (default 1,000,000) that differ in D records
 * on each side (default 10,000: 1% of a million changed on each side of a partition, as
 * `bench/replication.ts --heal-only` changes them): how long each peer's event loop is held in
 * one turn while they repair, and what the repair costs.
 *
 * Peer A runs in the main thread and peer B in a worker thread, each with its own event loop,
 * as two processes would. Calls and answers cross as JSON text, B answering through its
 * `PeerService` (the production path a peer call takes after its HTTP parse). A calls
 * `syncWith(B)` until the digests match (one call chains the rounds a large difference takes).
 *
 * Reported per `syncWith`: its rounds; each peer's longest event-loop delay (what a heartbeat
 * arriving meanwhile waits at most, `monitorEventLoopDelay` at 1 ms) and its 99th percentile;
 * the whole time; each peer's busy milliseconds (event-loop utilisation, which is wall time: it
 * counts what the other thread and the collector took of the cores meanwhile) and the
 * process's CPU time (both peers and the collector's threads); the entries listed in the
 * `reconcile` calls, the calls, and the records pulled and pushed. The reference: the same over
 * a `syncWith` between equal replicas. Run it on an older build (copy it into a checkout of
 * that build) for the figures before a change: an older `syncWith` makes one round a call.
 *
 *   npx tsx bench/anti-entropy-turns.ts [--instances=1000000] [--changed=10000]
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { systemClock } from '../src/clock/clock.js';
import { seededRng } from '../src/clock/rng.js';
import { AntiEntropy } from '../src/replication/anti-entropy.js';
import { PeerService } from '../src/replication/peer-service.js';
import type { RegistryNode } from '../src/node.js';
import type { PeerDescriptor, PeerTransport } from '../src/transport/transport.js';
import { requestJson } from '../src/transport/transport.js';
import { createTestNode } from '../test/support/node.js';
import { record } from '../test/support/records.js';
import { recordingLogger } from '../test/support/recording-logger.js';
import { round, table } from './lib.js';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const METADATA = { a: 'x', b: 'y', c: 'z', d: 'w', e: 'v' };
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Sides {
  instances: number;
  changed: number;
}
type ToWorker = { kind: 'call'; id: number; method: string; text: string } | { kind: 'measure'; on: boolean };
type FromWorker = { kind: 'ready' } | { kind: 'answer'; id: number; text?: string; error?: string } | { kind: 'measured'; turns: TurnFigures };

interface TurnFigures {
  longestMs: number;
  p99Ms: number;
  busyMs: number;
}

function instanceRecord(i: number, wallMs: number) {
  const data = { host: '10.0.0.2', port: 1 + (i % 60_000), securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: METADATA };
  return record({ service: `svc-${i % 1_000}`, instanceId: `i-${i}`, peerId: 'peer-z', wallMs, data, leaseDurationMs: 600_000 });
}

/** A node holding the same N instances as the other, then D changes of its own (every other stride, from `first`). */
async function filled({ instances, changed }: Sides, first: number): Promise<RegistryNode> {
  const { node } = await createTestNode({ start: false });
  for (let i = 0; i < instances; i++) node.registry.applyRemote(instanceRecord(i, 1_000), 600_000);
  const stride = Math.floor(instances / changed / 2);
  for (let n = 0; n < changed; n++) node.registry.applyRemote(instanceRecord(first + n * 2 * stride, 2_000), 600_000);
  return node;
}

/** The anti-entropy of `node` on the real clock, and the peer service that answers for it. */
function peerSide(node: RegistryNode, transport: PeerTransport, logger = recordingLogger()) {
  const antiEntropy = new AntiEntropy(
    { clock: systemClock, rng: seededRng(7), registry: node.registry, inbox: node.inbox, transport, logger, livePeers: () => [], reportContact: () => undefined },
    { selfId: node.registry.peerId, selfRegion: 'local', intervalMs: 1_000, crossRegionIntervalMs: 1_000, callTimeoutMs: 60_000, maxBucketsPerRound: 1_024, pushBatchMaxRecords: 500 },
  );
  const service = new PeerService({ membership: node.membership, inbox: node.inbox, antiEntropy, registry: node.registry, clock: systemClock, nextTurn, settled: () => true });
  return { antiEntropy, service, logger };
}

/**
 * Measures this thread's loop from `start()` until `stop()`: the delays of a 1 ms timer
 * (`monitorEventLoopDelay`, which does not keep the loop busy itself: what a heartbeat arriving
 * meanwhile would wait beyond its own work), and the loop's busy time (event-loop utilisation).
 */
function turnMeter() {
  let histogram = monitorEventLoopDelay({ resolution: 1 });
  let elu = performance.eventLoopUtilization();
  return {
    start() {
      histogram = monitorEventLoopDelay({ resolution: 1 });
      histogram.enable();
      elu = performance.eventLoopUtilization();
    },
    stop(): TurnFigures {
      histogram.disable();
      const used = performance.eventLoopUtilization(elu);
      return { longestMs: round(histogram.max / 1e6, 1), p99Ms: round(histogram.percentile(99) / 1e6, 1), busyMs: round(used.active, 0) };
    },
  };
}

/** Peer B: fills its node, then answers calls and measures its turns when asked. */
async function workerMain(sides: Sides): Promise<void> {
  const port = parentPort!;
  const node = await filled(sides, Math.floor(sides.instances / sides.changed / 2));
  // B only answers here: a call B would make (none in this bench) fails loudly.
  const { service } = peerSide(node, { call: () => Promise.reject(new Error('peer B makes no calls here')) });
  const meter = turnMeter();
  port.on('message', (message: ToWorker) => {
    if (message.kind === 'measure') {
      if (message.on) meter.start();
      else port.postMessage({ kind: 'measured', turns: meter.stop() } satisfies FromWorker);
      return;
    }
    void (async () => {
      await nextTurn();
      try {
        const answer = await service.handle(message.method as never, JSON.parse(message.text));
        port.postMessage({ kind: 'answer', id: message.id, text: JSON.stringify(answer) } satisfies FromWorker);
      } catch (error) {
        port.postMessage({ kind: 'answer', id: message.id, error: (error as Error).message } satisfies FromWorker);
      }
    })();
  });
  port.postMessage({ kind: 'ready' } satisfies FromWorker);
}

async function main(): Promise<void> {
  const sides: Sides = { instances: arg('instances', 1_000_000), changed: arg('changed', 10_000) };
  // The worker runs this same file through tsx's loader, registered in the worker itself.
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;
  const worker = new Worker(boot, { eval: true, workerData: sides });
  const answers = new Map<number, { resolve(text: string): void; reject(error: Error): void }>();
  let measured: ((turns: TurnFigures) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    worker.on('error', reject);
    worker.on('message', (message: FromWorker) => {
      if (message.kind === 'ready') resolve();
      else if (message.kind === 'measured') measured?.(message.turns);
      else {
        const waiting = answers.get(message.id)!;
        answers.delete(message.id);
        if (message.text === undefined) waiting.reject(new Error(message.error));
        else waiting.resolve(message.text);
      }
    });
  });
  let nextId = 0;
  const transport: PeerTransport = {
    async call(_peer, method, body) {
      const text = requestJson(body);
      const id = nextId++;
      const answer = new Promise<string>((resolve, reject) => answers.set(id, { resolve, reject }));
      worker.postMessage({ kind: 'call', id, method, text } satisfies ToWorker);
      return JSON.parse(await answer);
    },
  };
  const [a] = await Promise.all([filled(sides, 0), ready]);
  const sideA = peerSide(a, transport);
  const peerB: PeerDescriptor = { id: 'peer-b', url: 'http://in-worker', region: 'local', zone: '' };
  const measureB = (on: boolean) => {
    const figures = on ? undefined : new Promise<TurnFigures>((resolve) => (measured = resolve));
    worker.postMessage({ kind: 'measure', on } satisfies ToWorker);
    return figures;
  };

  const rows: Record<string, string | number>[] = [];
  const sync = async (label: string | number) => {
    sideA.logger.lines.length = 0;
    const meterA = turnMeter();
    measureB(true);
    meterA.start();
    const startedMs = performance.now();
    const cpuBefore = process.cpuUsage();
    const result = await sideA.antiEntropy.syncWith(peerB);
    const wholeMs = round(performance.now() - startedMs, 1);
    const cpu = process.cpuUsage(cpuBefore);
    const turnsA = meterA.stop();
    const turnsB = (await measureB(false))!;
    if (result === undefined) throw new Error('the sync failed');
    const rounds = sideA.logger.lines.filter((line) => line.msg === 'anti-entropy repaired keys').map((line) => line.fields);
    const sum = (field: string) => rounds.reduce((total, fields) => total + Number(fields[field] ?? 0), 0);
    rows.push({
      syncWith: label,
      rounds: rounds.length,
      'A max delay ms': turnsA.longestMs,
      'A p99 ms': turnsA.p99Ms,
      'B max delay ms': turnsB.longestMs,
      'B p99 ms': turnsB.p99Ms,
      'whole ms': wholeMs,
      'A busy ms': turnsA.busyMs,
      'B busy ms': turnsB.busyMs,
      'CPU ms': round((cpu.user + cpu.system) / 1000, 0),
      listed: sum('entriesSent'),
      'reconcile calls': sum('parts'),
      pulled: result.pulled,
      pushed: result.pushed,
    });
    return result.inSync;
  };
  for (let call = 1; call <= 6 && !(await sync(call)); call++);
  await sync('in sync (reference)');
  console.log(`anti-entropy between two peers of ${sides.instances.toLocaleString('en')} instances, ${sides.changed.toLocaleString('en')} changed on each side`);
  console.log(table(rows));
  await worker.terminate();
  await a.stop();
}

if (isMainThread) await main();
else await workerMain(workerData as Sides);
