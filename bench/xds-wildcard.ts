/**
 * xDS wildcard subscriptions over a big registry, in process (no socket): a peer of N instances
 * (default 1,000,000) over S services (default 1,000), one state-of-the-world stream and one
 * incremental stream, each subscribed to every Cluster and ClusterLoadAssignment (a wildcard:
 * what Envoy's default CDS and EDS ask). Four figures, each with its longest turn of the event
 * loop (the widest gap of a setImmediate ticker) and its total time:
 *
 *   - the state-of-the-world stream's first wildcard responses (CDS, then EDS), the native
 *     views older than their 1 s (as every push finds them in practice);
 *   - the incremental stream's first wildcard responses, right after;
 *   - the push of one change (a new instance of one service) to both streams, 1.1 s later;
 *   - the same again, 1.1 s after that;
 *   - the push of a new service (the Clusters move as a whole set), 1.1 s after that.
 *
 * Each stream's call encodes what it is written as grpc-js does in `write` (the ADS service's
 * serializer and the gRPC frame), in the turn it is written; an incremental answer comes in
 * parts, and its figure waits for every part.
 *
 * The clock is the test clock (test/support/fake-clock.ts): its timers fire inside `advance`,
 * with real turns of the loop between them, so the ticker sees each timer's work as a turn.
 *   npx tsx bench/xds-wildcard.ts [--instances=1000000] [--services=1000]
 */
import { performance } from 'node:perf_hooks';
import { silentLogger } from '../src/log/logger.js';
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse } from '../src/xds/delta-stream.js';
import { TYPE_URLS, XdsProtos } from '../src/xds/protos.js';
import { XdsServer } from '../src/xds/server.js';
import type { DiscoveryRequest, DiscoveryResponse } from '../src/xds/stream.js';
import { createTestNode } from '../test/support/node.js';
import { record } from '../test/support/records.js';
import { FakeAdsCall } from '../test/support/xds.js';
import { frameOf, PRE_FRAMED } from '../src/xds/grpc-framing.js';
import { round, table, turnGaps } from './lib.js';

const argument = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const N = argument('instances', 1_000_000);
const S = argument('services', 1_000);
const COALESCE_MS = 50;
const METADATA = { a: 'x' };

/** Longest gap between two turns of a setImmediate ticker while `work` runs, and its total time (ms). */
async function turns(work: () => Promise<void>): Promise<{ totalMs: number; longestTurnMs: number }> {
  const { totalMs, longestMs } = await turnGaps(work);
  return { totalMs, longestTurnMs: longestMs };
}

const { node, clock } = await createTestNode({ start: false });
const filledAt = performance.now();
const instance = (i: number) => ({ host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, port: 1 + (i % 60_000), securePort: null, status: 'UP' as const, weight: 1, zone: i % 2 ? 'z1' : 'z2', metadata: METADATA });
for (let i = 0; i < N; i++) {
  node.registry.applyRemote(record({ service: `svc-${i % S}`, instanceId: `i-${i}`, peerId: 'other', wallMs: clock.nowMs(), data: instance(i), leaseDurationMs: 60_000 }), 60_000);
}
console.error(`filled ${N} instances over ${S} services in ${round(performance.now() - filledAt, 0)} ms`);

const protos = new XdsProtos();
const server = new XdsServer(
  { views: node.views, clock, logger: silentLogger, protos, regionOfZone: node.regionOfZone } as ConstructorParameters<typeof XdsServer>[0],
  { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'ring_hash', pushCoalesceMs: COALESCE_MS },
);
/**
 * A call that encodes what it is written as grpc-js would in `write` (in the writer's turn): the
 * ADS service's serializer, then the gRPC frame around it (a copy), unless the response carries
 * its frame already (grpc-framing.ts: every state-of-the-world response does).
 */
class EncodingCall<Request, Response> extends FakeAdsCall<Request, Response> {
  bytes = 0;
  constructor(private readonly serialize: (response: Response) => Buffer) {
    super();
  }
  override write(response: Response): boolean {
    const framed = (response as { [PRE_FRAMED]?: Buffer })[PRE_FRAMED];
    this.bytes += (framed ?? frameOf(this.serialize(response))).length;
    return super.write(response);
  }
}
const sotw = new EncodingCall<DiscoveryRequest, DiscoveryResponse>((response) => protos.ads.StreamAggregatedResources!.responseSerialize(response));
const delta = new EncodingCall<DeltaDiscoveryRequest, DeltaDiscoveryResponse>((response) => protos.ads.DeltaAggregatedResources!.responseSerialize(response));
server.attach(sotw as never);
server.attachDelta(delta as never);
const TYPES = [TYPE_URLS.cluster, TYPE_URLS.endpoints];

/** Runs the clock (timers due now, then 1 ms at a time) until `done`. */
async function until(done: () => boolean): Promise<void> {
  await clock.advance(0);
  while (!done()) await clock.advance(1);
}
const gotAll = (call: { responses: { type_url: string }[] }, from: number) => () => TYPES.every((type) => call.responses.slice(from).some((response) => response.type_url === type));
/** Every resource of each type received since `from` (an incremental answer comes in parts, one a turn). */
const receivedOf = (call: { responses: DeltaDiscoveryResponse[] }, from: number, type: string) =>
  call.responses.slice(from).reduce((sum, response) => sum + (response.type_url === type ? response.resources.length : 0), 0);
const partsOf = (call: { responses: DeltaDiscoveryResponse[] }, from: number, type: string) => call.responses.slice(from).filter((response) => response.type_url === type).length;
const lastOf = <R extends { type_url: string }>(call: { responses: R[] }, type: string) => call.responses.findLast((response) => response.type_url === type)!;
const ackSotw = () => {
  for (const type of TYPES) sotw.send({ type_url: type, resource_names: [], version_info: lastOf(sotw, type).version_info, response_nonce: lastOf(sotw, type).nonce });
};
const ackDelta = () => {
  for (const type of TYPES) delta.send({ type_url: type, response_nonce: lastOf(delta, type).nonce });
};
const sizeOf = (response: DiscoveryResponse | DeltaDiscoveryResponse) => response.resources.length;

const rows: Record<string, string | number>[] = [];
const row = (what: string, figures: { totalMs: number; longestTurnMs: number }, sent: string) => {
  rows.push({ what, 'total ms': figures.totalMs, 'longest turn ms': figures.longestTurnMs, sent });
  console.error(`${what}: ${JSON.stringify(figures)} ${sent}`);
};

await clock.advance(1_100);
let from = sotw.responses.length;
row(
  'state of the world: first wildcard CDS + EDS',
  await turns(async () => {
    for (const type of TYPES) sotw.send({ type_url: type, resource_names: [], node: { id: 'bench' } });
    await until(gotAll(sotw, from));
  }),
  `${sizeOf(lastOf(sotw, TYPE_URLS.cluster))} clusters, ${sizeOf(lastOf(sotw, TYPE_URLS.endpoints))} assignments`,
);
ackSotw();
from = delta.responses.length;
row(
  'incremental: first wildcard CDS + EDS',
  await turns(async () => {
    for (const type of TYPES) delta.send({ type_url: type, resource_names_subscribe: ['*'], node: { id: 'bench' } });
    await until(() => TYPES.every((type) => receivedOf(delta, from, type) >= S));
  }),
  `${receivedOf(delta, from, TYPE_URLS.cluster)} clusters in ${partsOf(delta, from, TYPE_URLS.cluster)} response(s), ` +
    `${receivedOf(delta, from, TYPE_URLS.endpoints)} assignments in ${partsOf(delta, from, TYPE_URLS.endpoints)}`,
);
ackDelta();

for (const round of [1, 2]) {
  await clock.advance(1_100);
  const sotwFrom = sotw.responses.length;
  const deltaFrom = delta.responses.length;
  const figures = await turns(async () => {
    node.registry.applyRemote(record({ service: 'svc-1', instanceId: `new-${round}`, peerId: 'other', wallMs: clock.nowMs(), data: instance(N + round), leaseDurationMs: 60_000 }), 60_000);
    await clock.advance(COALESCE_MS);
    // The ClusterLoadAssignment moved (the Clusters did not: nothing else is sent).
    await until(() => sotw.responses.slice(sotwFrom).some((response) => response.type_url === TYPE_URLS.endpoints) && delta.responses.length > deltaFrom);
  });
  const pushedSotw = sotw.responses.slice(sotwFrom);
  const pushedDelta = delta.responses.slice(deltaFrom);
  row(
    `push after one change (${round})`,
    figures,
    `sotw: ${pushedSotw.map((r) => `${r.type_url.split('.').at(-1)} x${sizeOf(r)}`).join(', ')}; delta: ${pushedDelta.map((r) => `${r.type_url.split('.').at(-1)} x${sizeOf(r)}`).join(', ')}`,
  );
  ackSotw();
  ackDelta();
}

// A new service: the Clusters move as a whole set (state of the world sends every one again).
await clock.advance(1_100);
{
  const sotwFrom = sotw.responses.length;
  const deltaFrom = delta.responses.length;
  const figures = await turns(async () => {
    node.registry.applyRemote(record({ service: 'svc-new', instanceId: 'new-service', peerId: 'other', wallMs: clock.nowMs(), data: instance(N + 10), leaseDurationMs: 60_000 }), 60_000);
    await clock.advance(COALESCE_MS);
    await until(
      () =>
        TYPES.every((type) => sotw.responses.slice(sotwFrom).some((response) => response.type_url === type)) &&
        TYPES.every((type) => delta.responses.slice(deltaFrom).some((response) => response.type_url === type)),
    );
  });
  const pushed = (call: { responses: { type_url: string; resources: unknown[] }[] }, from: number) =>
    call.responses.slice(from).map((r) => `${r.type_url.split('.').at(-1)} x${r.resources.length}`).join(', ');
  row('push of a new service', figures, `sotw: ${pushed(sotw, sotwFrom)}; delta: ${pushed(delta, deltaFrom)}`);
}

console.log(`xDS wildcard, ${N} instances over ${S} services (in process, test clock)`);
console.log(table(rows));
await server.close();
process.exit(0);
