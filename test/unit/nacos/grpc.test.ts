import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { addressOf, type GrpcConnections, type PushStream } from '../../../src/nacos/grpc/connections.js';
import { EncodedPayload, messageOf, nacosPackage, payloadCodecOf, payloadOf, type Payload, type PushMessage } from '../../../src/nacos/grpc/protocol.js';
import { createTestNacos, testGrpcConnections, type TestNacos } from '../../support/nacos.js';
import { SteppedClock } from '../../support/stepped-clock.js';

let t: TestNacos;
let connections: GrpcConnections;
afterEach(async () => {
  connections?.close();
  await t?.close();
});

const codec = payloadCodecOf(nacosPackage());

/** A bi-stream's server side that records what is written (decoded as the client reads it), and can stop taking writes. */
class FakeStream extends EventEmitter implements PushStream {
  readonly written: Payload[] = [];
  /** The serialized pushes as written (the same Buffer for every stream of one push). */
  readonly encoded: Buffer[] = [];
  full = false;
  write(message: PushMessage): boolean {
    if (message instanceof EncodedPayload) this.encoded.push(message.bytes);
    this.written.push(message instanceof EncodedPayload ? codec.decode(message.bytes) : message);
    return !this.full;
  }
  notified(): { serviceInfo: { name: string; hosts: { ip: string; port: number }[] } }[] {
    return this.written.map((payload) => messageOf(payload)!).filter((message) => message.type === 'NotifySubscriberRequest').map((message) => message.body as never);
  }
}

async function setUp(file: Record<string, unknown> = {}): Promise<void> {
  // Three connections in all, two per principal (a token, or an address without one).
  t = await createTestNacos({ file: { cluster: { leaseDurationMs: 3_000, heartbeatIntervalMs: 1_000 }, nacos: { pushTargetsMax: 3 }, limits: { heldSharePerPrincipalRatio: 0.67 }, ...file } });
  connections = testGrpcConnections(t, { perConnectionMax: 4, streamlessIdleMs: 3_000 });
}

async function call(peer: string, type: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const payload = payloadOf(type, body);
  payload.metadata!.headers = headers;
  const answer = messageOf(await connections.request(peer, payload))!;
  return { type: answer.type, body: answer.body };
}

function open(peer: string): FakeStream {
  const stream = new FakeStream();
  connections.streamed(peer, stream, payloadOf('ConnectionSetupRequest', { clientVersion: 'test', tenant: '', labels: {}, abilities: {} }));
  return stream;
}

const instance = (port: number) => ({ ip: '10.0.0.1', port, weight: 1, healthy: true, enabled: true, ephemeral: true, clusterName: 'DEFAULT', metadata: { v: '2' } });
const register = (peer: string, port: number, service = 'grpc-web') =>
  call(peer, 'InstanceRequest', { type: 'registerInstance', namespace: 'public', serviceName: service, groupName: 'DEFAULT_GROUP', instance: instance(port), headers: {}, requestId: 'r1' });

describe('Nacos gRPC connections', () => {
  it('answers ServerCheck with the connection id, HealthCheck, and registers an instance', async () => {
    await setUp();
    expect(await call('127.0.0.1:5000', 'ServerCheckRequest', { requestId: 'a' })).toEqual({
      type: 'ServerCheckResponse',
      body: { connectionId: '127.0.0.1:5000', supportAbilityNegotiation: false, resultCode: 200, errorCode: 0, success: true, message: null, requestId: 'a' },
    });
    expect((await call('127.0.0.1:5000', 'HealthCheckRequest', {})).body.resultCode).toBe(200);
    expect(await register('127.0.0.1:5000', 9000)).toMatchObject({ type: 'InstanceResponse', body: { resultCode: 200, type: 'registerInstance', requestId: 'r1' } });
    const native = (await t.native.inject({ url: '/v1/services/grpc-web' })).json() as { instances: { instanceId: string; metadata: unknown }[] };
    expect(native.instances).toMatchObject([{ instanceId: '10.0.0.1:9000', metadata: { v: '2' } }]);
  });

  it('keeps the instances of an open connection past their lease, and lets them expire by the lease once it closes', async () => {
    await setUp();
    const stream = open('127.0.0.1:5000');
    await register('127.0.0.1:5000', 9000);
    await t.clock.advance(10_000);
    expect(t.node.registry.find({ namespace: 'default', service: 'grpc-web', instanceId: '10.0.0.1:9000' })).toBeDefined();
    connections.closed('127.0.0.1:5000', stream);
    await t.clock.advance(2_000);
    expect((await t.native.inject({ url: '/v1/services/grpc-web' })).json().instances).toHaveLength(1);
    await t.clock.advance(3_000);
    expect((await t.native.inject({ url: '/v1/services/grpc-web' })).json().instances).toHaveLength(0);
    // A connection without a stream (unary calls only) does not keep its instances either.
    await register('127.0.0.1:6000', 9001, 'grpc-other');
    await t.clock.advance(5_000);
    expect((await t.native.inject({ url: '/v1/services/grpc-other' })).json().instances).toHaveLength(0);
  });

  it('renews the open connections in turns of renewSliceInstances, a tick meanwhile starting no second pass', async () => {
    t = await createTestNacos({ file: { cluster: { leaseDurationMs: 3_000, heartbeatIntervalMs: 1_000 } } });
    const stepped = new SteppedClock(t.clock);
    connections = testGrpcConnections(t, { perConnectionMax: 4, renewSliceInstances: 2, clock: stepped });
    const peers = ['127.0.0.1:5000', '127.0.0.1:5001', '127.0.0.1:5002'];
    for (const [i, peer] of peers.entries()) {
      open(peer);
      await register(peer, 9000 + 2 * i);
      await register(peer, 9001 + 2 * i);
    }
    stepped.runAll();
    const leaseEnds = () => Array.from({ length: 6 }, (_, i) => t.node.store.get({ namespace: 'default', service: 'grpc-web', instanceId: `10.0.0.1:${9000 + i}` })!.leaseExpiresAtMs);
    t.clock.jump(2_000);
    const before = leaseEnds();
    const renewed = () => leaseEnds().filter((endMs, i) => endMs > before[i]!).length;
    stepped.fireTick();
    expect(renewed()).toBe(2);
    expect(stepped.pending).toBe(1);
    stepped.fireTick();
    expect(stepped.pending).toBe(1);
    expect(renewed()).toBe(2);
    stepped.runSlice();
    expect(renewed()).toBe(4);
    stepped.runAll();
    expect(renewed()).toBe(6);
    // The next tick starts a new pass.
    t.clock.jump(500);
    const again = leaseEnds();
    stepped.fireTick();
    expect(leaseEnds().filter((endMs, i) => endMs > again[i]!)).toHaveLength(2);
    stepped.runAll();
  });

  it('answers a subscription with the service, pushes each change once per subscription variant, shared between connections', async () => {
    await setUp();
    const a = open('127.0.0.1:5000');
    const b = open('127.0.0.1:5001');
    await register('127.0.0.1:5000', 9000);
    const subscribed = await call('127.0.0.1:5001', 'SubscribeServiceRequest', { namespace: '', serviceName: 'grpc-web', groupName: 'DEFAULT_GROUP', clusters: '', subscribe: true, headers: {} });
    expect(subscribed.type).toBe('SubscribeServiceResponse');
    expect(subscribed.body.serviceInfo).toMatchObject({ name: 'grpc-web', groupName: 'DEFAULT_GROUP', clusters: '', hosts: [{ ip: '10.0.0.1', port: 9000 }] });
    await call('127.0.0.1:5000', 'SubscribeServiceRequest', { serviceName: 'grpc-web', subscribe: true, headers: {} });
    await register('127.0.0.1:5000', 9001);
    await t.clock.advance(0);
    expect(b.notified().map((push) => push.serviceInfo.hosts.map((host) => host.port))).toEqual([[9000, 9001]]);
    expect(a.notified()).toHaveLength(1);
    expect(a.encoded.at(-1)).toBe(b.encoded.at(-1));
    // Unsubscribed: no more pushes.
    await call('127.0.0.1:5001', 'SubscribeServiceRequest', { serviceName: 'grpc-web', subscribe: false, headers: {} });
    await call('127.0.0.1:5000', 'InstanceRequest', { type: 'deregisterInstance', serviceName: 'grpc-web', instance: instance(9001), headers: {} });
    await t.clock.advance(0);
    expect(b.notified()).toHaveLength(1);
    expect(a.notified().at(-1)!.serviceInfo.hosts.map((host) => host.port)).toEqual([9000]);
  });

  it('serializes a push once per variant and change, whatever the number of connections, and finds no subscriber for another service', async () => {
    await setUp({ nacos: { pushTargetsMax: 10 }, limits: { heldSharePerPrincipalRatio: 1 } });
    const streams = ['127.0.0.1:5000', '127.0.0.1:5001', '127.0.0.1:5002', '127.0.0.1:5003'].map((peer) => ({ peer, stream: open(peer) }));
    for (const { peer } of streams) await call(peer, 'SubscribeServiceRequest', { serviceName: 'grpc-web', subscribe: true, headers: {} });
    // One connection asks a cluster of its own as well: a second variant.
    await call('127.0.0.1:5000', 'SubscribeServiceRequest', { serviceName: 'grpc-web', clusters: 'zone-a', subscribe: true, headers: {} });
    expect(connections.subscriptionCount).toBe(5);
    await register('127.0.0.1:5000', 9000, 'grpc-unwatched');
    await t.clock.advance(0);
    expect(connections.counts).toMatchObject({ encodes: 0, pushes: 0 });
    await register('127.0.0.1:5000', 9000);
    await t.clock.advance(0);
    expect(connections.counts).toMatchObject({ encodes: 2, pushes: 5 });
    const shared = streams[1]!.stream.encoded[0]!;
    for (const { stream } of streams.slice(1)) expect(stream.encoded).toEqual([shared]);
    expect(streams[1]!.stream.notified()[0]!.serviceInfo.hosts.map((host) => host.port)).toEqual([9000]);
    // A connection whose stream ends leaves the index: the next change is not pushed to it.
    connections.closed('127.0.0.1:5003', streams[3]!.stream);
    expect(connections.subscriptionCount).toBe(4);
    await register('127.0.0.1:5000', 9001);
    await t.clock.advance(0);
    expect(connections.counts).toMatchObject({ encodes: 4, pushes: 9 });
    expect(streams[3]!.stream.encoded).toHaveLength(1);
  });

  it('holds pushes to a stream that stops reading and sends the latest state once it drains', async () => {
    await setUp();
    const stream = open('127.0.0.1:5000');
    await call('127.0.0.1:5000', 'SubscribeServiceRequest', { serviceName: 'grpc-web', subscribe: true, headers: {} });
    stream.full = true;
    await register('127.0.0.1:5000', 9000);
    await t.clock.advance(0);
    await register('127.0.0.1:5000', 9001);
    await t.clock.advance(0);
    await register('127.0.0.1:5000', 9002);
    await t.clock.advance(0);
    expect(stream.notified()).toHaveLength(1);
    stream.full = false;
    stream.emit('drain');
    expect(stream.notified().map((push) => push.serviceInfo.hosts.length)).toEqual([1, 3]);
  });

  it('serves ServiceQuery, ServiceList and BatchInstance, and refuses what it does not serve with an ErrorResponse', async () => {
    await setUp();
    const batch = await call('127.0.0.1:5000', 'BatchInstanceRequest', { type: 'batchRegisterInstance', serviceName: 'batch', instances: [instance(1), instance(2)], headers: {} });
    expect(batch).toMatchObject({ type: 'BatchInstanceResponse', body: { resultCode: 200 } });
    const query = await call('127.0.0.1:5000', 'ServiceQueryRequest', { serviceName: 'batch', cluster: '', healthyOnly: true, udpPort: 0, headers: {} });
    expect((query.body.serviceInfo as { hosts: unknown[] }).hosts).toHaveLength(2);
    expect((await call('127.0.0.1:5000', 'ServiceListRequest', { pageNo: 1, pageSize: 10, headers: {} })).body).toMatchObject({ count: 1, serviceNames: ['batch'] });
    expect(await call('127.0.0.1:5000', 'ConfigQueryRequest', { dataId: 'x' })).toMatchObject({ type: 'ErrorResponse', body: { resultCode: 500, errorCode: 501 } });
    const persistent = await call('127.0.0.1:5000', 'InstanceRequest', { type: 'registerInstance', serviceName: 'p', instance: { ...instance(3), ephemeral: false }, headers: {} });
    expect(persistent).toMatchObject({ type: 'ErrorResponse', body: { resultCode: 500, errorCode: 400, message: expect.stringMatching(/^REG_ERR_VALIDATION: ephemeral/) } });
    // Bounded: at most perConnectionMax instances per connection, and connectionsMax connections.
    for (const port of [3, 4]) expect((await register('127.0.0.1:5000', port, 'batch')).body).toMatchObject({ resultCode: 200 });
    expect((await register('127.0.0.1:5000', 5, 'batch')).body).toMatchObject({ errorCode: 409 });
    // Connections are slots of the peer's pool: at most two per principal (its share; here an
    // address without a token), three in all; the refusal names the cap and the setting.
    connections.close();
    await setUp();
    expect(await call('10.0.0.1:5001', 'HealthCheckRequest', {})).toMatchObject({ type: 'HealthCheckResponse' });
    expect(await call('10.0.0.1:5002', 'HealthCheckRequest', {})).toMatchObject({ type: 'HealthCheckResponse' });
    expect(await call('10.0.0.1:5003', 'HealthCheckRequest', {})).toMatchObject({
      type: 'ErrorResponse',
      body: { errorCode: 429, message: expect.stringMatching(/^REG_ERR_TOO_MANY_CONNECTIONS: .*address 10\.0\.0\.1 already holds 2 nacos grpc connections.*limits.heldSharePerPrincipalRatio/) },
    });
    // One principal holding its share leaves room for another.
    expect(await call('10.0.0.2:5002', 'HealthCheckRequest', {})).toMatchObject({ type: 'HealthCheckResponse' });
    expect(await call('10.0.0.3:5003', 'HealthCheckRequest', {})).toMatchObject({ type: 'ErrorResponse', body: { errorCode: 429, message: expect.stringMatching(/^REG_ERR_TOO_MANY_CONNECTIONS: .*3 nacos grpc connections \(nacos.pushTargetsMax\)/) } });
    expect(t.pools.grpcConnections.held).toBe(3);
    expect([t.metrics.pools.get('grpc_connections')!.refusedAtPrincipalShare, t.metrics.pools.get('grpc_connections')!.refusedAtPeerCap]).toEqual([1, 1]);
    // Connections that never opened their stream are forgotten once idle, their slots given back.
    await t.clock.advance(4_000);
    expect(connections.size).toBe(0);
    expect(t.pools.grpcConnections.held).toBe(0);
    expect((await call('10.0.0.3:5003', 'HealthCheckRequest', {})).body.resultCode).toBe(200);
  });

  it('takes the access token from the request headers', async () => {
    await setUp({ security: { tokens: [{ name: 'writer', token: 'writer-token-0123456789', namespaces: ['*'], scopes: ['write'] }] } });
    expect((await register('127.0.0.1:5000', 9000)).body).toMatchObject({ resultCode: 500, errorCode: 401 });
    const withToken = await call('127.0.0.1:5000', 'InstanceRequest', { type: 'registerInstance', serviceName: 's', instance: instance(1), headers: { accessToken: 'writer-token-0123456789' } });
    expect(withToken.body.resultCode).toBe(200);
  });

  it('reads the address of a gRPC peer', () => {
    expect(addressOf('127.0.0.1:5000')).toBe('127.0.0.1');
    expect(addressOf('ipv4:10.0.0.2:80')).toBe('10.0.0.2');
    expect(addressOf('[::1]:5000')).toBe('::1');
  });
});
