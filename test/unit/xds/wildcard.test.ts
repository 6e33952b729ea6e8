import { status } from '@grpc/grpc-js';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RegistryNode } from '../../../src/node.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse } from '../../../src/xds/delta-stream.js';
import { TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { XdsServer } from '../../../src/xds/server.js';
import type { DiscoveryRequest, DiscoveryResponse } from '../../../src/xds/stream.js';
import type { FakeClock } from '../../support/fake-clock.js';
import { createTestNode } from '../../support/node.js';
import { recordingLogger } from '../../support/recording-logger.js';
import { FakeAdsCall, RecordingAdsCall } from '../../support/xds.js';

/**
 * Wildcard subscriptions over many services (src/xds/wildcard-set.ts): the set is built in
 * turns of bounded work, sent only complete, the same to every stream of a push, and a
 * change during a build is pushed after it; a push after one change encodes that service alone.
 */

class FakeCall extends FakeAdsCall<DiscoveryRequest, DiscoveryResponse> {}
class FakeDeltaCall extends FakeAdsCall<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {}
class RecordingCall extends RecordingAdsCall<DiscoveryRequest, DiscoveryResponse> {}
const INTERNAL = { code: status.INTERNAL, details: 'the registry could not build a response' };

const COALESCE_MS = 50;
const SERVICES = 30;
const UNITS_PER_TURN = 10;
let protos: XdsProtos;
let server: XdsServer | undefined;
beforeAll(() => {
  protos = new XdsProtos();
});
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
});

const serviceName = (i: number) => `svc-${String(i).padStart(2, '0')}`;

function register(node: RegistryNode, service: string, port: number, extra: Record<string, unknown> = {}) {
  node.registry.register(parseRegistration({ service, host: '10.0.0.1', port, leaseDurationMs: 60_000, ...extra }, 'default', node.config.limits, node.config.cluster));
}

/**
 * A listener over SERVICES services of one instance each, whose wildcard builds do at most
 * UNITS_PER_TURN units a turn; `turns` counts the clock's timer callbacks as they run (each is a
 * turn of the loop), so a test can see what a build did in each and act between two of them.
 */
async function setUp(options: { regionOfZone?: (zone: string) => string | undefined; start?: boolean } = {}) {
  const { node, clock } = await createTestNode({ start: options.start ?? true });
  const turns = { count: 0, after: null as ((turn: number) => void) | null };
  const schedule = clock.setTimeout.bind(clock);
  clock.setTimeout = (fn, delayMs) =>
    schedule(() => {
      turns.count += 1;
      fn();
      turns.after?.(turns.count);
    }, delayMs);
  server = new XdsServer(
    { views: node.views, clock, logger: recordingLogger(), protos, ...(options.regionOfZone ? { regionOfZone: options.regionOfZone } : {}) },
    { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'ring_hash', pushCoalesceMs: COALESCE_MS, wildcardUnitsPerTurn: UNITS_PER_TURN },
  );
  return { node, clock, turns, server };
}

function registerAll(node: RegistryNode) {
  for (let i = 0; i < SERVICES; i += 1) register(node, serviceName(i), 1);
}

const nameOf = (any: { type_url: string; value: Buffer }) => (protos.unpack(any).name ?? protos.unpack(any).cluster_name) as string;
const allNames = Array.from({ length: SERVICES }, (_, i) => serviceName(i));
/** The ports of one ClusterLoadAssignment among a response's resources. */
const portsOf = (response: DiscoveryResponse, name: string) =>
  response.resources
    .map((any) => protos.unpack(any) as any)
    .filter((assignment) => assignment.cluster_name === name)
    .flatMap((assignment) => assignment.endpoints.flatMap((l: any) => l.lb_endpoints.map((lb: any) => lb.endpoint.address.socket_address.port_value)));
const ofType = (call: FakeCall, type: string) => call.responses.filter((response) => response.type_url === type);
const ack = (call: FakeCall, type: string) => {
  const last = ofType(call, type).at(-1)!;
  call.send({ type_url: type, resource_names: [], version_info: last.version_info, response_nonce: last.nonce });
};

/** Runs every timer due now, and those they set for now (a build's turns). */
async function runTurns(clock: FakeClock): Promise<void> {
  await clock.advance(0);
}

/**
 * `call` (a new FakeCall by default) attached to `server`, with a wildcard subscription of each
 * of `types` answered (the build's turns run) and, when `acked`, each answer ACKed.
 */
async function wildcardCall<C extends FakeCall>(server: XdsServer, clock: FakeClock, types: string[], options: { call?: C; acked?: boolean } = {}): Promise<C> {
  const call = options.call ?? (new FakeCall() as C);
  server.attach(call as never);
  for (const type of types) call.send({ type_url: type, resource_names: [] });
  await runTurns(clock);
  if (options.acked) for (const type of types) ack(call, type);
  return call;
}

describe('wildcard subscriptions over many services', () => {
  it('builds the set in turns of at most the bound and answers the request once the set is complete', async () => {
    const { node, clock, turns, server } = await setUp();
    registerAll(node);
    const servicesPerTurn = new Map<number, number>();
    const unitsPerTurn = new Map<number, number>();
    const listed = server.catalog.listed.bind(server.catalog);
    vi.spyOn(server.catalog, 'listed').mockImplementation((...args) => {
      const found = listed(...args);
      servicesPerTurn.set(turns.count, (servicesPerTurn.get(turns.count) ?? 0) + 1);
      unitsPerTurn.set(turns.count, (unitsPerTurn.get(turns.count) ?? 0) + found.cost);
      return found;
    });
    const call = new FakeCall();
    server.attach(call as never);
    call.send({ type_url: TYPE_URLS.cluster, resource_names: [], node: { id: 'envoy' } });
    // Not in the request's turn: 30 services built afresh cost 3 units each.
    expect(call.responses).toHaveLength(0);
    expect(server.wildcard.building('ring_hash')).toBe(true);
    await runTurns(clock);
    expect(call.responses).toHaveLength(1);
    expect(call.last().resources.map(nameOf)).toEqual(allNames);
    // Each turn stops once it spent the bound: at most the bound plus one service's cost (3) less one.
    expect(servicesPerTurn.size).toBeGreaterThanOrEqual(SERVICES / 4);
    for (const units of unitsPerTurn.values()) expect(units).toBeLessThanOrEqual(UNITS_PER_TURN + 2);
    expect([...servicesPerTurn.values()].reduce((a, b) => a + b, 0)).toBe(SERVICES);
  });

  it('sends every stream of a push the same complete set, and pushes a change made during the build after it', async () => {
    const { node, clock, turns, server } = await setUp();
    registerAll(node);
    const streams = [new FakeCall(), new FakeCall()];
    const delta = new FakeDeltaCall();
    for (const call of streams) server.attach(call as never);
    server.attachDelta(delta as never);
    for (const call of streams) for (const type of [TYPE_URLS.cluster, TYPE_URLS.endpoints]) call.send({ type_url: type, resource_names: [] });
    delta.send({ type_url: TYPE_URLS.endpoints, resource_names_subscribe: ['*'] });
    await runTurns(clock);
    for (const call of streams) for (const type of [TYPE_URLS.cluster, TYPE_URLS.endpoints]) ack(call, type);
    delta.send({ type_url: TYPE_URLS.endpoints, response_nonce: delta.last().nonce });
    const before = streams.map((call) => call.responses.length);

    // A new instance of svc-10, then (two turns into the push's build, svc-00 passed) one of svc-00.
    let buildTurns = 0;
    turns.after = () => {
      if (!server.wildcard.building('ring_hash') || ++buildTurns !== 2) return;
      register(node, serviceName(0), 2);
    };
    register(node, serviceName(10), 2);
    await clock.advance(COALESCE_MS);
    expect(buildTurns).toBeGreaterThanOrEqual(2);
    await clock.advance(COALESCE_MS);
    turns.after = null;

    const pushed = streams.map((call, i) => call.responses.slice(before[i]));
    // The Clusters did not change (an instance is an endpoint): only assignments are pushed, twice.
    for (const responses of pushed) expect(responses.map((response) => response.type_url)).toEqual([TYPE_URLS.endpoints, TYPE_URLS.endpoints]);
    // The same responses to both streams (one set per push), the change of the build's time in the second.
    expect(pushed[0]).toEqual(pushed[1]);
    expect(pushed[0]![0]).toBe(pushed[1]![0]);
    expect(pushed[0]![0]!.resources.map(nameOf)).toEqual([serviceName(10)]);
    expect(pushed[0]![1]!.resources.map(nameOf)).toEqual([serviceName(0)]);
    expect(portsOf(pushed[0]![1]!, serviceName(0))).toEqual([1, 2]);
    const deltaPushed = delta.responses.slice(1).map((response) => response.resources.map((resource) => resource.name));
    expect(deltaPushed).toEqual([[serviceName(10)], [serviceName(0)]]);
  });

  it('sends Clusters as the whole set on every push that moves one, never part of it', async () => {
    const { node, clock, server } = await setUp();
    registerAll(node);
    const call = await wildcardCall(server, clock, [TYPE_URLS.cluster], { acked: true });
    register(node, 'svc-new', 1);
    await clock.advance(COALESCE_MS);
    expect(call.responses).toHaveLength(2);
    expect(call.last().resources.map(nameOf)).toEqual([...allNames, 'svc-new']);
    ack(call, TYPE_URLS.cluster);
    node.registry.cancel({ namespace: 'default', service: serviceName(3), instanceId: '10.0.0.1:1' });
    await clock.advance(COALESCE_MS);
    expect(call.responses).toHaveLength(3);
    expect(call.last().resources.map(nameOf)).toEqual([...allNames.filter((name) => name !== serviceName(3)), 'svc-new']);
  });

  it('encodes only the changed service on a push after one change, however long since the last push', async () => {
    const { node, clock, server } = await setUp();
    registerAll(node);
    const call = await wildcardCall(server, clock, [TYPE_URLS.cluster, TYPE_URLS.endpoints], { acked: true });
    // Past the native views' 1 s and past the instances' first lease end (heartbeats renew them
    // in place, which replaces each service's stable view with one serving the same instances).
    for (let second = 0; second < 70; second += 10) {
      await clock.advance(10_000);
      for (let i = 0; i < SERVICES; i += 1) node.registry.heartbeat({ namespace: 'default', service: serviceName(i), instanceId: '10.0.0.1:1' });
    }
    const encodes = vi.spyOn(protos, 'pack');
    try {
      register(node, serviceName(7), 2);
      await clock.advance(COALESCE_MS);
      // One service's Listener (with its connection manager and router), Cluster and assignment.
      expect(encodes).toHaveBeenCalledTimes(5);
    } finally {
      encodes.mockRestore();
    }
    expect(ofType(call, TYPE_URLS.endpoints).at(-1)!.resources.map(nameOf)).toEqual([serviceName(7)]);
    expect(ofType(call, TYPE_URLS.cluster)).toHaveLength(1);
  });

  it('follows what leases serve without a store change: an instance whose lease ran out leaves its assignment at the next push', async () => {
    // Not started: no reaper, so the lease runs out with no eviction (no store change).
    const { node, clock, server } = await setUp({ start: false });
    register(node, 'short', 1, { leaseDurationMs: 5_000 });
    register(node, 'short', 2);
    register(node, 'other', 1);
    const call = await wildcardCall(server, clock, [TYPE_URLS.endpoints]);
    expect(portsOf(call.last(), 'short')).toEqual([1, 2]);
    ack(call, TYPE_URLS.endpoints);
    await clock.advance(6_000);
    register(node, 'other', 2);
    await clock.advance(COALESCE_MS);
    expect(call.last().resources.map(nameOf).sort()).toEqual(['other', 'short']);
    expect(portsOf(call.last(), 'short')).toEqual([2]);
  });

  it('encodes a service again when a zone of its instances gets another region (no record changes)', async () => {
    const regions = new Map<string, string>();
    const { node, clock, server } = await setUp({ regionOfZone: (zone) => regions.get(zone) });
    register(node, 'zoned', 1, { zone: 'z1' });
    register(node, 'other', 1);
    const call = await wildcardCall(server, clock, [TYPE_URLS.endpoints]);
    const localityOf = (response: DiscoveryResponse) =>
      response.resources.map((any) => protos.unpack(any) as any).find((assignment) => assignment.cluster_name === 'zoned').endpoints[0].locality;
    expect(localityOf(call.last())).toMatchObject({ region: '', zone: 'z1' });
    ack(call, TYPE_URLS.endpoints);
    regions.set('z1', 'eu');
    register(node, 'other', 2);
    await clock.advance(COALESCE_MS);
    expect(call.last().resources.map(nameOf).sort()).toEqual(['other', 'zoned']);
    expect(localityOf(call.last())).toMatchObject({ region: 'eu', zone: 'z1' });
  });

  it('does not send a stream the set it no longer wants (a request naming resources came while it was built)', async () => {
    const { node, clock, server } = await setUp();
    registerAll(node);
    const call = new FakeCall();
    server.attach(call as never);
    call.send({ type_url: TYPE_URLS.cluster, resource_names: [] });
    call.send({ type_url: TYPE_URLS.cluster, resource_names: [serviceName(1)] });
    expect(call.responses).toHaveLength(1);
    await runTurns(clock);
    expect(call.responses).toHaveLength(1);
    expect(call.last().resources.map(nameOf)).toEqual([serviceName(1)]);
  });

  it('answers an incremental wildcard with the whole set once built, then what changed, and names a service gone', async () => {
    const { node, clock, server } = await setUp();
    registerAll(node);
    const call = new FakeDeltaCall();
    server.attachDelta(call as never);
    call.send({ type_url: TYPE_URLS.cluster, resource_names_subscribe: ['*'] });
    expect(call.responses).toHaveLength(0);
    await runTurns(clock);
    expect(call.last().resources.map((resource) => resource.name)).toEqual(allNames);
    call.send({ type_url: TYPE_URLS.cluster, response_nonce: call.last().nonce });
    register(node, serviceName(4), 2);
    await clock.advance(COALESCE_MS);
    // Its Cluster did not change: nothing is sent.
    expect(call.responses).toHaveLength(1);
    node.registry.cancel({ namespace: 'default', service: serviceName(4), instanceId: '10.0.0.1:1' });
    node.registry.cancel({ namespace: 'default', service: serviceName(4), instanceId: '10.0.0.1:2' });
    await clock.advance(COALESCE_MS);
    expect(call.last()).toMatchObject({ resources: [], removed_resources: [serviceName(4)] });
  });

  it('keeps resources only for served services', async () => {
    const { node, clock, server } = await setUp();
    registerAll(node);
    const call = await wildcardCall(server, clock, [TYPE_URLS.cluster]);
    expect(server.catalog.keptCount).toBe(SERVICES);
    ack(call, TYPE_URLS.cluster);
    node.registry.cancel({ namespace: 'default', service: serviceName(3), instanceId: '10.0.0.1:1' });
    await clock.advance(COALESCE_MS);
    expect(server.catalog.keptCount).toBe(SERVICES - 1);
  });

  it('sends a stream what changed since the set it was last sent, across sets built for other streams meanwhile', async () => {
    const { node, clock, server } = await setUp();
    registerAll(node);
    const call = await wildcardCall(server, clock, [TYPE_URLS.endpoints], { acked: true });
    // A change, and another stream's request built a set holding it before the push's set.
    register(node, serviceName(2), 2);
    const other = await wildcardCall(server, clock, [TYPE_URLS.endpoints]);
    expect(portsOf(other.last(), serviceName(2))).toEqual([1, 2]);
    await clock.advance(COALESCE_MS);
    expect(call.responses).toHaveLength(2);
    expect(call.last().resources.map(nameOf)).toEqual([serviceName(2)]);
    expect(portsOf(call.last(), serviceName(2))).toEqual([1, 2]);
  });

  it('sends a stream the whole set again when it turns its wildcard off and on, and an incremental stream a name it unsubscribed that the wildcard still wants', async () => {
    const { node, clock, server } = await setUp();
    registerAll(node);
    const call = await wildcardCall(server, clock, [TYPE_URLS.cluster]);
    // Naming one it holds already sends nothing (as before wildcard sets); the others are forgotten.
    call.send({ type_url: TYPE_URLS.cluster, resource_names: [serviceName(1)], response_nonce: call.last().nonce });
    expect(call.responses).toHaveLength(1);
    call.send({ type_url: TYPE_URLS.cluster, resource_names: ['*'], response_nonce: call.last().nonce });
    await runTurns(clock);
    expect(call.responses).toHaveLength(2);
    expect(call.last().resources.map(nameOf)).toEqual(allNames);

    const delta = new FakeDeltaCall();
    server.attachDelta(delta as never);
    delta.send({ type_url: TYPE_URLS.cluster, resource_names_subscribe: ['*', serviceName(5)] });
    await runTurns(clock);
    expect(delta.last().resources).toHaveLength(SERVICES);
    delta.send({ type_url: TYPE_URLS.cluster, response_nonce: delta.last().nonce, resource_names_unsubscribe: [serviceName(5)] });
    await runTurns(clock);
    expect(delta.last().resources.map((resource) => resource.name)).toEqual([serviceName(5)]);
    // Naming one more resource of the set is answered at once, with no set built.
    delta.send({ type_url: TYPE_URLS.cluster, response_nonce: delta.last().nonce, resource_names_subscribe: [serviceName(6), 'unknown'] });
    expect(server.wildcard.building('ring_hash')).toBe(false);
    expect(delta.last()).toMatchObject({ resources: [], removed_resources: ['unknown'] });
  });

  it('ends the streams waiting for a build that throws (INTERNAL), in the request\'s turn or a later one, and builds again for the next request and push', async () => {
    const { node, clock, server } = await setUp();
    registerAll(node);
    const encodes = vi.spyOn(protos, 'pack');
    // In the request's turn (its first), then in a later turn (SERVICES services do not fit one).
    const first = new RecordingCall();
    server.attach(first as never);
    encodes.mockImplementationOnce(() => {
      throw new Error('cannot encode');
    });
    first.send({ type_url: TYPE_URLS.cluster, resource_names: [] });
    expect(first.errors).toEqual([INTERNAL]);
    const second = new RecordingCall();
    server.attach(second as never);
    second.send({ type_url: TYPE_URLS.cluster, resource_names: [] });
    expect(server.wildcard.building('ring_hash')).toBe(true);
    encodes.mockImplementationOnce(() => {
      throw new Error('cannot encode');
    });
    await runTurns(clock);
    expect(second.errors).toEqual([INTERNAL]);
    expect(server.wildcard.building('ring_hash')).toBe(false);
    // A push whose build throws ends the wildcard streams it was for.
    const pushed = await wildcardCall(server, clock, [TYPE_URLS.cluster], { call: new RecordingCall() });
    expect(pushed.last().resources.map(nameOf)).toEqual(allNames);
    ack(pushed, TYPE_URLS.cluster);
    register(node, 'svc-new', 1);
    encodes.mockImplementationOnce(() => {
      throw new Error('cannot encode');
    });
    await clock.advance(COALESCE_MS);
    expect(pushed.errors).toEqual([INTERNAL]);
    encodes.mockRestore();
    // Nothing is left waiting: a new stream is answered, and pushed the next change.
    const third = await wildcardCall(server, clock, [TYPE_URLS.cluster], { call: new RecordingCall() });
    expect(third.last().resources.map(nameOf)).toEqual([...allNames, 'svc-new']);
    ack(third, TYPE_URLS.cluster);
    register(node, 'svc-newer', 1);
    await clock.advance(COALESCE_MS);
    expect(third.errors).toEqual([]);
    expect(third.last().resources.map(nameOf)).toEqual([...allNames, 'svc-new', 'svc-newer']);
  });

  it('names a service purged and registered again in another case as the store spells it now', async () => {
    const { node, clock } = await setUp();
    register(node, 'greeter', 1);
    register(node, 'other', 1);
    const delta = new FakeDeltaCall();
    server!.attachDelta(delta as never);
    delta.send({ type_url: TYPE_URLS.cluster, resource_names_subscribe: ['*'] });
    await runTurns(clock);
    delta.send({ type_url: TYPE_URLS.cluster, response_nonce: delta.last().nonce });
    node.registry.cancel({ namespace: 'default', service: 'greeter', instanceId: '10.0.0.1:1' });
    await clock.advance(COALESCE_MS);
    expect(delta.last()).toMatchObject({ resources: [], removed_resources: ['greeter'] });
    // Its tombstone ends (a purge: no change announces it), and the service comes back spelled otherwise.
    node.registry.purge(node.registry.store.get({ namespace: 'default', service: 'greeter', instanceId: '10.0.0.1:1' })!);
    register(node, 'Greeter', 1);
    await clock.advance(COALESCE_MS);
    const resources = delta.last().resources.map((resource) => [resource.name, nameOf(resource.resource)]);
    expect(resources).toEqual([['Greeter', 'Greeter']]);
    // A state-of-the-world wildcard gets it so named too.
    const call = await wildcardCall(server!, clock, [TYPE_URLS.cluster]);
    expect(call.last().resources.map(nameOf)).toEqual(['Greeter', 'other']);
  });
});
