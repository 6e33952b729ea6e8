import { status } from '@grpc/grpc-js';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RegistryNode } from '../../../src/node.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import { PRE_ENCODED, TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { XdsServer } from '../../../src/xds/server.js';
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse } from '../../../src/xds/delta-stream.js';
import { MAX_RESOURCE_NAMES, type DiscoveryRequest, type DiscoveryResponse } from '../../../src/xds/stream.js';
import type { FakeClock } from '../../support/fake-clock.js';
import { createTestNode } from '../../support/node.js';
import { FakeAdsCall, RecordingAdsCall } from '../../support/xds.js';
import { recordingLogger } from '../../support/recording-logger.js';

class FakeCall extends FakeAdsCall<DiscoveryRequest, DiscoveryResponse> {}

const COALESCE_MS = 50;
let protos: XdsProtos;
let server: XdsServer | undefined;
beforeAll(() => {
  protos = new XdsProtos();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setUp(namespaces = ['default']) {
  const { node, clock } = await createTestNode();
  const logger = recordingLogger();
  server = new XdsServer({ views: node.views, clock, logger, protos }, { host: '127.0.0.1', port: 0, namespaces, lbPolicy: 'ring_hash', pushCoalesceMs: COALESCE_MS });
  const call = new FakeCall();
  server.attach(call as never);
  return { node, clock, logger, call, server };
}

function register(node: RegistryNode, port: number, extra: Record<string, unknown> = {}) {
  node.registry.register(
    parseRegistration({ service: 'greeter', host: '10.0.0.1', port, leaseDurationMs: 60_000, ...extra }, (extra.namespace as string) ?? 'default', node.config.limits, node.config.cluster),
  );
}

const names = (response: DiscoveryResponse) => response.resources.map((any) => (protos.unpack(any).name ?? protos.unpack(any).cluster_name) as string);
const endpointPorts = (response: DiscoveryResponse) =>
  response.resources.flatMap((any) => (protos.unpack(any) as any).endpoints.flatMap((l: any) => l.lb_endpoints.map((lb: any) => lb.endpoint.address.socket_address.port_value)));

/** Answers the latest response of the call with an ACK naming `names`. */
function ack(call: FakeCall, typeUrl: string, names: string[]): void {
  call.send({ type_url: typeUrl, resource_names: names, version_info: call.last().version_info, response_nonce: call.last().nonce });
}

async function push(clock: FakeClock): Promise<void> {
  await clock.advance(COALESCE_MS);
}

/** How many DiscoveryResponses `run` has the protos encode. */
async function countEncodes(run: () => Promise<void>): Promise<number> {
  const spy = vi.spyOn(protos, 'responseWriter');
  try {
    await run();
    return spy.mock.calls.length;
  } finally {
    spy.mockRestore();
  }
}

describe('XdsServer (state of the world ADS)', () => {
  it('answers a Listener subscription for an unknown service with an empty response, then pushes it when it appears', async () => {
    const { node, clock, call } = await setUp();
    call.send({ type_url: TYPE_URLS.listener, resource_names: ['greeter'], node: { id: 'c1' } });
    expect(call.responses).toHaveLength(1);
    expect(call.last()).toMatchObject({ type_url: TYPE_URLS.listener, resources: [], version_info: '1' });
    call.send({ type_url: TYPE_URLS.listener, resource_names: ['greeter'], version_info: '1', response_nonce: call.last().nonce });
    register(node, 1);
    expect(call.responses).toHaveLength(1);
    await push(clock);
    expect(call.responses).toHaveLength(2);
    expect(names(call.last())).toEqual(['greeter']);
    expect(call.last().version_info).toBe('2');
  });

  it('coalesces a burst of changes into one push per type, and sends nothing on an ACK', async () => {
    const { node, clock, call, server } = await setUp();
    register(node, 1);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
    expect(endpointPorts(call.last())).toEqual([1]);
    ack(call, TYPE_URLS.endpoints, ['greeter']);
    expect(call.responses).toHaveLength(1);
    for (let port = 2; port <= 10; port += 1) register(node, port);
    await push(clock);
    expect(call.responses).toHaveLength(2);
    expect(endpointPorts(call.last())).toEqual([1, 10, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(server.stats).toMatchObject({ acks: 1, nacks: 0, responses: 2 });
  });

  it('logs and counts a NACK and never sends the rejected resources again; the next change is pushed', async () => {
    const { node, clock, call, server, logger } = await setUp();
    register(node, 1);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
    const rejected = call.last();
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'], version_info: '', response_nonce: rejected.nonce, error_detail: { code: 3, message: 'no' } });
    await clock.advance(10_000);
    expect(call.responses).toHaveLength(1);
    expect(server.stats.nacks).toBe(1);
    expect(logger.lines.some((line) => line.level === 'warn' && line.msg.includes('NACK'))).toBe(true);
    register(node, 2);
    await push(clock);
    expect(call.responses).toHaveLength(2);
    expect(endpointPorts(call.last())).toEqual([1, 2]);
  });

  it('ignores a request answering an older response (stale nonce)', async () => {
    const { node, clock, call } = await setUp();
    register(node, 1);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
    const first = call.last();
    register(node, 2);
    await push(clock);
    expect(call.responses).toHaveLength(2);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter', 'other'], version_info: first.version_info, response_nonce: first.nonce });
    expect(call.responses).toHaveLength(2);
    register(node, 3, { service: 'other' });
    await push(clock);
    // 'other' was asked for only in the stale request: nothing is pushed for it.
    expect(call.responses).toHaveLength(2);
  });

  it('sends Listeners and Clusters as a whole set, leaving out a service that is gone', async () => {
    const { node, clock, call } = await setUp();
    register(node, 1);
    register(node, 2, { service: 'other' });
    call.send({ type_url: TYPE_URLS.cluster, resource_names: ['greeter', 'other'] });
    expect(names(call.last()).sort()).toEqual(['greeter', 'other']);
    ack(call, TYPE_URLS.cluster, ['greeter', 'other']);
    node.registry.cancel({ namespace: 'default', service: 'other', instanceId: '10.0.0.1:2' });
    await push(clock);
    expect(call.responses).toHaveLength(2);
    expect(names(call.last())).toEqual(['greeter']);
  });

  it('gives a wildcard subscription every service of the exposed namespaces, and nothing of the others', async () => {
    const { node, clock, call } = await setUp(['default', 'team-a']);
    register(node, 1);
    register(node, 2, { namespace: 'team-a' });
    register(node, 3, { namespace: 'hidden' });
    call.send({ type_url: TYPE_URLS.cluster, resource_names: [] });
    expect(names(call.last()).sort()).toEqual(['greeter', 'greeter.team-a']);
    ack(call, TYPE_URLS.cluster, []);
    register(node, 4, { namespace: 'hidden' });
    await push(clock);
    expect(call.responses).toHaveLength(1);
  });

  it('sends a wildcard answer larger than a turn over several turns, whole, and a smaller answer made after it only after it', async () => {
    const { node, clock } = await createTestNode();
    server = new XdsServer({ views: node.views, clock, logger: recordingLogger(), protos }, { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'ring_hash', pushCoalesceMs: COALESCE_MS, frameBytesPerTurn: 256 });
    const call = new FakeCall();
    server.attach(call as never);
    for (let i = 0; i < 20; i += 1) {
      node.registry.register(parseRegistration({ service: `svc-${i}`, host: '10.0.0.1', port: 1 + i, leaseDurationMs: 60_000 }, 'default', node.config.limits, node.config.cluster));
    }
    call.send({ type_url: TYPE_URLS.cluster, resource_names: [], node: { id: 'c1' } });
    // Twenty Clusters are about 4 KB: sixteen turns and more, none of it sent before the last.
    expect(call.responses).toHaveLength(0);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['svc-3'] });
    expect(call.responses).toHaveLength(0);
    await clock.advance(0);
    for (let turns = 0; call.responses.length === 0 && turns < 100; turns += 1) await clock.advance(1);
    expect(call.responses.map((response) => response.type_url)).toEqual([TYPE_URLS.cluster, TYPE_URLS.endpoints]);
    expect(names(call.responses[0]!).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `svc-${i}`).sort());
    expect(endpointPorts(call.responses[1]!)).toEqual([4]);
    // The bytes sent are the response's, whole.
    const sent = call.responses[0] as DiscoveryResponse & { [PRE_ENCODED]: Buffer };
    expect(names(protos.ads.StreamAggregatedResources!.responseDeserialize(sent[PRE_ENCODED]) as DiscoveryResponse)).toEqual(names(sent));
  });

  it('pushes nothing when a view is rebuilt with the same endpoints (lease countdowns only)', async () => {
    const { node, clock, call } = await setUp();
    register(node, 1);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
    ack(call, TYPE_URLS.endpoints, ['greeter']);
    // New metadata changes the record (and the view) but not what xDS carries.
    const revision = node.views.revisionOf('default', 'greeter');
    register(node, 1, { metadata: { build: '2' } });
    expect(node.views.revisionOf('default', 'greeter')).toBeGreaterThan(revision);
    await push(clock);
    expect(call.responses).toHaveLength(1);
  });

  it('ends a stream whose request names too many resources, with INVALID_ARGUMENT', async () => {
    const { call } = await setUp();
    const errors: { code: number; details: string }[] = [];
    call.on('error', (error: { code: number; details: string }) => errors.push(error));
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: Array.from({ length: MAX_RESOURCE_NAMES + 1 }, (_, i) => `s${i}`) });
    expect(call.responses).toHaveLength(0);
    expect(errors).toEqual([{ code: status.INVALID_ARGUMENT, details: expect.stringContaining('at most 10000 resources') }]);
  });

  it('sends every stream of a push the same response, encoded once, whose bytes are the response', async () => {
    const { node, clock, call, server } = await setUp();
    const others = [new FakeCall(), new FakeCall(), new FakeCall()];
    for (const other of others) server.attach(other as never);
    register(node, 1);
    register(node, 1, { service: 'other' });
    const streams = [call, ...others];
    // Three streams want greeter alone; the last wants greeter and other.
    for (const stream of streams.slice(0, 3)) stream.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
    others[2]!.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter', 'other'] });
    // Answers to requests are each stream's own.
    expect(new Set(streams.map((stream) => stream.last().nonce)).size).toBe(4);
    for (const stream of streams) ack(stream, TYPE_URLS.endpoints, stream === others[2] ? ['greeter', 'other'] : ['greeter']);

    // What protobufjs makes of the same response, from a plain copy (the serializer sends a
    // pre-encoded response's own bytes as they are).
    const encode = (response: DiscoveryResponse) =>
      protos.ads.StreamAggregatedResources!.responseSerialize({ version_info: response.version_info, resources: response.resources, type_url: response.type_url, nonce: response.nonce });
    const encodes = await countEncodes(async () => {
      register(node, 2);
      await push(clock);
    });
    expect(encodes).toBe(1);
    const pushed = streams.map((stream) => stream.last());
    expect(new Set(pushed.slice(0, 3)).size).toBe(1);
    // The fourth stream is sent only greeter too (other did not change): the same response.
    expect(pushed[3]).toBe(pushed[0]);
    expect(endpointPorts(pushed[0]!)).toEqual([1, 2]);

    const sotw = protos.ads.StreamAggregatedResources!;
    const bytes = sotw.responseSerialize(pushed[0]);
    expect(bytes.equals(encode(pushed[0]!))).toBe(true);
    expect(sotw.responseDeserialize(bytes)).toMatchObject({ version_info: pushed[0]!.version_info, nonce: pushed[0]!.nonce, type_url: TYPE_URLS.endpoints });
    // A plain object is still encoded by the serializer.
    const plain = { version_info: 'x', resources: [], type_url: TYPE_URLS.endpoints, nonce: 'y' };
    expect(sotw.responseSerialize(plain).equals(encode(plain))).toBe(true);
    // Each stream ACKs the shared nonce, and a stream's nonces never repeat.
    for (const stream of streams) ack(stream, TYPE_URLS.endpoints, stream === others[2] ? ['greeter', 'other'] : ['greeter']);
    expect(server.stats.acks).toBe(8);
    for (const stream of streams) expect(new Set(stream.responses.map((response) => response.nonce)).size).toBe(stream.responses.length);
  });

  it('encodes a push once per distinct response, not once per stream', async () => {
    const { node, clock, call, server } = await setUp();
    const others = Array.from({ length: 9 }, () => new FakeCall());
    for (const other of others) server.attach(other as never);
    register(node, 1);
    register(node, 1, { service: 'other' });
    const streams = [call, ...others];
    streams.forEach((stream, i) => stream.send({ type_url: TYPE_URLS.endpoints, resource_names: [i % 2 === 0 ? 'greeter' : 'other'] }));
    streams.forEach((stream, i) => ack(stream, TYPE_URLS.endpoints, [i % 2 === 0 ? 'greeter' : 'other']));
    const encodes = await countEncodes(async () => {
      register(node, 2);
      register(node, 2, { service: 'other' });
      await push(clock);
    });
    expect(streams.every((stream) => stream.responses.length === 2)).toBe(true);
    expect(encodes).toBe(2);
    expect(new Set(streams.map((stream) => stream.last())).size).toBe(2);
  });

  it('sends a gRPC C-core 1.51 client a ROUND_ROBIN Cluster (its ring_hash crashes) and others RING_HASH, under lbPolicy auto', async () => {
    const { node } = await setUp();
    const auto = new XdsServer({ views: node.views, clock: node.components.clock, logger: recordingLogger(), protos }, { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'auto', pushCoalesceMs: COALESCE_MS });
    try {
      register(node, 1, { zone: 'a', weight: 1 });
      register(node, 2, { zone: 'a', weight: 3 });
      const ccore = new FakeCall();
      const grpcJs = new FakeCall();
      auto.attach(ccore as never);
      auto.attach(grpcJs as never);
      const cluster = (call: FakeCall) => protos.unpack(call.last().resources[0]!) as { lb_policy: string };
      const localityWeight = (call: FakeCall) => (protos.unpack(call.last().resources[0]!) as any).endpoints[0].load_balancing_weight.value as number;
      ccore.send({ type_url: TYPE_URLS.cluster, resource_names: ['greeter'], node: { id: 'py', user_agent_name: 'gRPC C-core linux Python', user_agent_version: 'C-core 29.0.0 Python 1.51.1' } });
      grpcJs.send({ type_url: TYPE_URLS.cluster, resource_names: ['greeter'], node: { id: 'js', user_agent_name: 'gRPC Node Pure JS', user_agent_version: '1.14.7' } });
      expect(cluster(ccore).lb_policy).toBe('ROUND_ROBIN');
      expect(cluster(grpcJs).lb_policy).toBe('RING_HASH');
      // Weights are kept where the policy honours them: the zone weighs its endpoints' sum under round_robin.
      ccore.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
      grpcJs.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
      expect(localityWeight(ccore)).toBe(4);
      expect(localityWeight(grpcJs)).toBe(1);
      expect(endpointPorts(ccore.last()).sort()).toEqual([1, 2]);
    } finally {
      await auto.close();
    }
  });

  it('looks each resource up once per push, whatever the number of streams, and not at all on an ACK', async () => {
    const { node, clock, call, server } = await setUp();
    const streams = [call, ...Array.from({ length: 9 }, () => new FakeCall())];
    for (const stream of streams.slice(1)) server.attach(stream as never);
    register(node, 1);
    for (const stream of streams) stream.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
    const lookups = vi.spyOn(server.catalog, 'get');
    for (const stream of streams) ack(stream, TYPE_URLS.endpoints, ['greeter']);
    expect(lookups).not.toHaveBeenCalled();
    register(node, 2);
    await push(clock);
    expect(streams.every((stream) => stream.responses.length === 2)).toBe(true);
    expect(lookups).toHaveBeenCalledTimes(1);
    // An ACK that changes the names is answered as before.
    ack(call, TYPE_URLS.endpoints, ['greeter', 'other']);
    expect(lookups).toHaveBeenCalledTimes(3);
  });

  it('answers each spelling of a service a stream names, from one encoding named as the store spells it', async () => {
    const { node, clock, call } = await setUp();
    register(node, 1);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['Greeter', 'GREETER', 'greeter'] });
    expect(names(call.last())).toEqual(['greeter', 'greeter', 'greeter']);
    ack(call, TYPE_URLS.endpoints, ['Greeter', 'GREETER', 'greeter']);
    const encodes = vi.spyOn(protos, 'pack');
    try {
      register(node, 2);
      await push(clock);
      // One Listener (with its connection manager and router), Cluster and assignment: not one set per spelling.
      expect(encodes).toHaveBeenCalledTimes(5);
    } finally {
      encodes.mockRestore();
    }
    expect(names(call.last())).toEqual(['greeter', 'greeter', 'greeter']);
    expect(endpointPorts(call.last())).toEqual([1, 2, 1, 2, 1, 2]);
  });

  it('keeps the resources built for a balancing policy while a stream uses it, not after', async () => {
    const { node, call, server } = await setUp();
    register(node, 1);
    const other = new FakeCall();
    server.attach(other as never);
    for (const stream of [call, other]) stream.send({ type_url: TYPE_URLS.cluster, resource_names: ['greeter'] });
    expect(server.catalog.keptCount).toBe(1);
    call.emit('end');
    expect(server.catalog.keptCount).toBe(1);
    other.emit('cancelled');
    expect(server.catalog.keptCount).toBe(0);
  });

  it('ends with INTERNAL a stream whose push cannot be built, still pushes to the others, and lets nothing escape the push', async () => {
    const { node, clock, logger, server } = await setUp();
    register(node, 1);
    register(node, 1, { service: 'other' });
    const failing = new RecordingAdsCall<DiscoveryRequest, DiscoveryResponse>();
    const served = new RecordingAdsCall<DiscoveryRequest, DiscoveryResponse>();
    server.attach(failing as never);
    server.attach(served as never);
    failing.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'] });
    served.send({ type_url: TYPE_URLS.endpoints, resource_names: ['other'] });
    ack(failing, TYPE_URLS.endpoints, ['greeter']);
    ack(served, TYPE_URLS.endpoints, ['other']);
    vi.spyOn(protos, 'pack').mockImplementationOnce(() => {
      throw new Error('cannot encode');
    });
    register(node, 2);
    register(node, 2, { service: 'other' });
    await push(clock);
    vi.restoreAllMocks();
    expect(failing.errors).toEqual([{ code: status.INTERNAL, details: 'the registry could not build a response' }]);
    expect(served.errors).toEqual([]);
    expect(endpointPorts(served.last())).toEqual([1, 2]);
    expect(logger.lines.filter((line) => line.level === 'error').map((line) => line.msg)).toEqual(['xds: cannot answer a request; the stream is ended']);
  });

  it('does not answer a type it does not serve, and counts it', async () => {
    const { call, server } = await setUp();
    call.send({ type_url: TYPE_URLS.routeConfiguration, resource_names: ['greeter'] });
    expect(call.responses).toHaveLength(0);
    expect(server.stats.unknownTypes).toBe(1);
  });
});

class FakeDeltaCall extends FakeAdsCall<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {}

async function setUpDelta() {
  const { node, clock } = await createTestNode();
  server = new XdsServer({ views: node.views, clock, logger: node.components.logger, protos }, { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'ring_hash', pushCoalesceMs: COALESCE_MS });
  const call = new FakeDeltaCall();
  server.attachDelta(call as never);
  return { node, clock, call, server };
}


const deltaPorts = (response: DeltaDiscoveryResponse) =>
  response.resources.flatMap((r) => (protos.unpack(r.resource) as any).endpoints.flatMap((l: any) => l.lb_endpoints.map((lb: any) => lb.endpoint.address.socket_address.port_value)));

describe('incremental (delta) ADS', () => {
  it('tells a subscription to an unknown service it does not exist, then sends it when it appears', async () => {
    const { node, clock, call } = await setUpDelta();
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: ['greeter'] });
    expect(call.last()).toMatchObject({ resources: [], removed_resources: ['greeter'] });
    call.send({ type_url: TYPE_URLS.endpoints, response_nonce: call.last().nonce });
    register(node, 1);
    await clock.advance(COALESCE_MS);
    expect(call.responses).toHaveLength(2);
    expect(call.last().resources.map((r) => r.name)).toEqual(['greeter']);
    expect(deltaPorts(call.last())).toEqual([1]);
  });

  it('sends an answer of more resources than a response carries as several responses, one a turn, in order with what follows', async () => {
    const { node, clock } = await createTestNode();
    server = new XdsServer({ views: node.views, clock, logger: node.components.logger, protos }, { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'ring_hash', pushCoalesceMs: COALESCE_MS, deltaResourcesPerResponse: 3 });
    const call = new FakeDeltaCall();
    server.attachDelta(call as never);
    const services = Array.from({ length: 8 }, (_, i) => `svc-${i}`);
    for (const [i, service] of services.entries()) register(node, 1 + i, { service });
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: [...services, 'missing'] });
    // The first part at once, with the names that do not exist; the others in later turns
    // (each a timer of its own: paced-writes.test.ts), and a push made meanwhile after them.
    expect(call.responses).toHaveLength(1);
    expect(call.last().resources).toHaveLength(3);
    expect(call.last().removed_resources).toEqual(['missing']);
    register(node, 100, { service: 'svc-0' });
    await clock.advance(COALESCE_MS);
    expect(call.responses).toHaveLength(4);
    // The push of svc-0 came after every part of the answer before it.
    expect(call.last().resources.map((r) => r.name)).toEqual(['svc-0']);
    const parts = call.responses.slice(0, 3);
    expect(parts.map((part) => part.resources.length)).toEqual([3, 3, 2]);
    expect(parts.flatMap((part) => part.resources.map((r) => r.name)).sort()).toEqual([...services].sort());
    expect(new Set(call.responses.map((response) => response.nonce)).size).toBe(4);
    expect(server.stats.responses).toBe(4);
  });

  it('sends only what changed, nothing on an ACK, and nothing after an unsubscribe', async () => {
    const { node, clock, call, server } = await setUpDelta();
    register(node, 1);
    register(node, 2, { service: 'other' });
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: ['greeter', 'other'] });
    expect(call.last().resources.map((r) => r.name).sort()).toEqual(['greeter', 'other']);
    call.send({ type_url: TYPE_URLS.endpoints, response_nonce: call.last().nonce });
    expect(call.responses).toHaveLength(1);
    register(node, 3);
    await clock.advance(COALESCE_MS);
    expect(call.last().resources.map((r) => r.name)).toEqual(['greeter']);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_unsubscribe: ['greeter'], response_nonce: call.last().nonce });
    register(node, 4);
    await clock.advance(COALESCE_MS);
    expect(call.responses).toHaveLength(2);
    expect(server.stats.acks).toBe(2);
  });

  it('does not resend what a reconnecting client says it holds, and names what is gone', async () => {
    const { node, clock, call, server } = await setUpDelta();
    register(node, 1);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: ['greeter'] });
    const version = call.last().resources[0]!.version;
    const again = new FakeDeltaCall();
    server.attachDelta(again as never);
    again.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: ['greeter'], initial_resource_versions: { greeter: version } });
    expect(again.responses).toHaveLength(0);
    node.registry.cancel({ namespace: 'default', service: 'greeter', instanceId: '10.0.0.1:1' });
    await clock.advance(COALESCE_MS);
    expect(again.last()).toMatchObject({ resources: [], removed_resources: ['greeter'] });
  });

  it('names each resource as the stream subscribed to it, its bytes named as the store spells the service', async () => {
    const { node, call } = await setUpDelta();
    register(node, 1);
    call.send({ type_url: TYPE_URLS.cluster, resource_names_subscribe: ['Greeter', 'greeter'] });
    expect(call.last().resources.map((r) => [r.name, protos.unpack(r.resource).name])).toEqual([
      ['Greeter', 'greeter'],
      ['greeter', 'greeter'],
    ]);
  });

  it('counts a NACK and does not resend', async () => {
    const { node, clock, call, server } = await setUpDelta();
    register(node, 1);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: ['greeter'] });
    call.send({ type_url: TYPE_URLS.endpoints, response_nonce: call.last().nonce, error_detail: { code: 3, message: 'no' } });
    await clock.advance(10_000);
    expect(call.responses).toHaveLength(1);
    expect(server.stats.nacks).toBe(1);
  });
});
