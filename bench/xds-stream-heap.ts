/**
 * The heap each xDS wildcard stream holds once answered: a peer in process with `--instances`
 * over `--services` (default 200,000 each), one wildcard stream (CDS and EDS) answered first
 * (the set and its shared lists are made for it), then `--streams` more (default 10), each
 * answered and ACKed; the V8 heap after two forced collections, before and after those, over
 * their number. `--delta` opens incremental streams instead of state-of-the-world ones;
 * `--churn` changes one service before each stream opens (every stream then asks for a set of
 * its own, and a push follows each change). The fake calls keep no response.
 *
 *   node --expose-gc --import tsx bench/xds-stream-heap.ts [--instances=200000] [--services=200000] [--streams=10] [--delta] [--churn]
 */
import { silentLogger } from '../src/log/logger.js';
import { TYPE_URLS, XdsProtos } from '../src/xds/protos.js';
import { XdsServer } from '../src/xds/server.js';
import { createTestNode } from '../test/support/node.js';
import { record } from '../test/support/records.js';
import { FakeAdsCall } from '../test/support/xds.js';
const argument = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const N = argument('instances', 200_000);
const S = argument('services', 200_000);
const K = argument('streams', 10);
const kind = process.argv.includes('--delta') ? 'delta' : 'sotw';
if (typeof (globalThis as { gc?: unknown }).gc !== 'function') throw new Error('run with node --expose-gc');
const { node, clock } = await createTestNode({ start: false });
for (let i = 0; i < N; i++) node.registry.applyRemote(record({ service: `svc-${i % S}`, instanceId: `i-${i}`, peerId: 'other', wallMs: clock.nowMs(), data: { host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, port: 1 + (i % 60000), securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} }, leaseDurationMs: 600_000 }), 600_000);
const protos = new XdsProtos();
const server = new XdsServer({ views: node.views, clock, logger: silentLogger, protos, regionOfZone: node.regionOfZone } as never, { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'ring_hash', pushCoalesceMs: 50 });
interface Written {
  type_url: string;
  nonce: string;
  version_info?: string;
  resources: unknown[];
}

/** Keeps only the last response of each type (what an ACK names), not their bytes. */
class Dropping extends FakeAdsCall<Record<string, unknown>, Written> {
  lastOfType = new Map<string, { nonce: string; version_info?: string }>();
  count = 0;
  override write(response: Written): boolean {
    this.count += response.resources.length;
    this.lastOfType.set(response.type_url, { nonce: response.nonce, version_info: response.version_info });
    return true;
  }
}
const TYPES = [TYPE_URLS.cluster, TYPE_URLS.endpoints];
const heap = () => {
  const { gc } = globalThis as unknown as { gc: () => void };
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1e6;
};
await clock.advance(1100);
// One stream first: the set and its shared lists are made once, not counted per stream.
const calls: Dropping[] = [];
async function open() {
  const call = new Dropping();
  if (kind === 'sotw') server.attach(call as never); else server.attachDelta(call as never);
  for (const type of TYPES) call.send(kind === 'sotw' ? { type_url: type, resource_names: [], node: { id: 'x' } } : { type_url: type, resource_names_subscribe: ['*'], node: { id: 'x' } });
  await clock.advance(0);
  while (call.count < 2 * S) await clock.advance(1);
  for (const type of TYPES) { const l = call.lastOfType.get(type)!; call.send(kind === 'sotw' ? { type_url: type, resource_names: [], version_info: l.version_info, response_nonce: l.nonce } : { type_url: type, response_nonce: l.nonce }); }
  calls.push(call);
}
await open();
const before = heap();
const churn = process.argv.includes('--churn');
for (let k = 0; k < K; k++) {
  if (churn) {
    node.registry.applyRemote(record({ service: `svc-${k}`, instanceId: `new-${k}`, peerId: 'other', wallMs: clock.nowMs(), data: { host: '10.99.0.1', port: 1 + k, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} }, leaseDurationMs: 600_000 }), 600_000);
  }
  await open();
}
// Every push sent, its ACKs in.
for (let i = 0; i < 200; i++) await clock.advance(1);
const after = heap();
console.log(`${kind}${churn ? ', a change before each' : ''}: ${K} more wildcard streams over ${S} services hold ${(after - before).toFixed(1)} MB of heap, ${((after - before) / K).toFixed(2)} MB a stream`);
await server.close();
process.exit(0);
