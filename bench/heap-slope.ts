/**
 * Where a peer's bytes per instance go, without RSS noise: one peer in this process (fake
 * clock, no sockets), registrations through its HTTP routes with `inject` (the same JSON parse
 * and validation as over a socket), and the V8 heap after a full collection before and after
 * loading N instances; the difference over N is the heap's bytes per instance. RSS adds the
 * garbage collector's headroom on top (bench/memory.ts measures that over HTTP).
 * `--replicated`: the instances come as another peer's replication batches instead (JSON
 * parsed, through the inbox), as most of a cluster peer's instances do.
 *   node --expose-gc --import tsx bench/heap-slope.ts [--instances=50000] [--services=100] [--replicated] [--snapshot=FILE]
 * Five metadata keys per instance, as bench/memory.ts registers them.
 */
import v8 from 'node:v8';
import { formatVersion } from '../src/clock/hlc.js';
import { createTestServer } from '../test/support/server.js';
import { scaleBody } from './scale-loader.js';

const argument = (name: string, fallback: string) =>
  process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const instances = Number(argument('instances', '50000'));
const services = Number(argument('services', '100'));
const snapshot = argument('snapshot', '');
const replicated = process.argv.includes('--replicated');
const REMOTE_PEER = 'peer-remote-1';
const WARM_UP = 2_000;
const IN_FLIGHT = 100;

const body = (i: number) => JSON.stringify(scaleBody(i, services, 'mem'));

const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) throw new Error('run with node --expose-gc');
const { app, node, clock } = await createTestServer();

/** Instances `from` to `to` as one replication batch of another peer, as its JSON arrives. */
function replicationBatch(from: number, to: number): string {
  const records = [];
  for (let i = from; i < to; i++) {
    const body = scaleBody(i, services, 'mem') as { service: string; instanceId: string; host: string; port: number; metadata: Record<string, string> };
    records.push({
      namespace: 'default',
      service: body.service,
      instanceId: body.instanceId,
      data: { host: body.host, port: body.port, securePort: null, status: 'UP', weight: 1, zone: '', metadata: body.metadata },
      version: formatVersion({ wallMs: clock.nowMs(), counter: i % 1_000, peerId: REMOTE_PEER }),
      owner: REMOTE_PEER,
      deleted: null,
      leaseDurationMs: 600_000,
      registeredAtMs: clock.nowMs(),
      leaseRemainingMs: 600_000,
    });
  }
  return JSON.stringify(records);
}

async function load(from: number, to: number): Promise<void> {
  if (replicated) {
    for (let i = from; i < to; i += 500) node.inbox.apply(REMOTE_PEER, JSON.parse(replicationBatch(i, Math.min(to, i + 500))) as unknown[], 'replication');
    return;
  }
  for (let i = from; i < to; i += IN_FLIGHT) {
    const batch: Promise<void>[] = [];
    for (let j = i; j < Math.min(to, i + IN_FLIGHT); j++) {
      batch.push(
        app.inject({ method: 'POST', url: '/v1/instances', payload: body(j), headers: { 'content-type': 'application/json' } }).then((answer) => {
          if (answer.statusCode !== 201) throw new Error(`register answered ${answer.statusCode}: ${answer.body}`);
        }),
      );
    }
    await Promise.all(batch);
  }
}

function heapBytes(): number {
  collect!();
  collect!();
  return v8.getHeapStatistics().used_heap_size;
}

await load(0, WARM_UP);
const before = heapBytes();
await load(WARM_UP, WARM_UP + instances);
const after = heapBytes();
console.log(`heap: ${((after - before) / instances).toFixed(1)} bytes per instance over ${instances} ${replicated ? 'replicated' : 'registered'} instances, ${services} services`);
if (snapshot) console.log(`snapshot: ${v8.writeHeapSnapshot(snapshot)}`);
await app.close();
process.exit(0);
