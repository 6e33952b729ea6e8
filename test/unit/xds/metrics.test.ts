import { status } from '@grpc/grpc-js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AdapterMetrics, PUSH_DELAY_BUCKETS_S } from '../../../src/metrics/adapter-metrics.js';
import type { RegistryNode } from '../../../src/node.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import type { DeltaDiscoveryRequest, DeltaDiscoveryResponse } from '../../../src/xds/delta-stream.js';
import { outcomeOfGrpcStatus } from '../../../src/xds/metrics.js';
import { TYPE_URLS, XdsProtos } from '../../../src/xds/protos.js';
import { devPorts, XdsServer } from '../../../src/xds/server.js';
import { MAX_RESOURCE_NAMES, type DiscoveryRequest, type DiscoveryResponse } from '../../../src/xds/stream.js';
import type { FakeClock } from '../../support/fake-clock.js';
import { createTestNode } from '../../support/node.js';
import { recordingLogger } from '../../support/recording-logger.js';
import { FakeAdsCall, RecordingAdsCall } from '../../support/xds.js';

class FakeCall extends RecordingAdsCall<DiscoveryRequest, DiscoveryResponse> {}
class FakeDeltaCall extends FakeAdsCall<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {}

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

/** An xDS server whose metrics port is its own AdapterMetrics on the fake clock (latencies and push delays in virtual time). */
async function setUp(streamsMax = 100) {
  const { node, clock } = await createTestNode();
  const metrics = new AdapterMetrics({ monotonicMs: () => clock.nowMs(), nowMs: () => clock.nowMs() });
  server = new XdsServer(
    { views: node.views, clock, logger: recordingLogger(), protos, ports: { ...devPorts(clock), metrics } },
    { host: '127.0.0.1', port: 0, namespaces: ['default'], lbPolicy: 'ring_hash', pushCoalesceMs: COALESCE_MS, streamsMax },
  );
  const xds = metrics.adapter('xds');
  return { node, clock, metrics, xds, server };
}

function register(node: RegistryNode, port: number) {
  node.registry.register(parseRegistration({ service: 'greeter', host: '10.0.0.1', port, leaseDurationMs: 60_000 }, 'default', node.config.limits, node.config.cluster));
}

const ackLast = (call: FakeCall, typeUrl: string) => call.send({ type_url: typeUrl, resource_names: ['greeter'], version_info: call.last().version_info, response_nonce: call.last().nonce });
/** The push delay bucket (upper bound, seconds) that holds `count` observations, or undefined. */
function delayBucketOf(metrics: AdapterMetrics): number | undefined {
  const { delayBuckets } = metrics.adapter('xds').pushes;
  const index = delayBuckets.findIndex((count) => count > 0);
  return index < 0 ? undefined : (PUSH_DELAY_BUCKETS_S[index] ?? Infinity);
}

describe('the xDS adapter in the metrics port', () => {
  it('counts each DiscoveryRequest of its RPC, ACKs and NACKs by resource type, and pushes timed from the window’s first change', async () => {
    const { node, clock, metrics, xds, server } = await setUp();
    const call = new FakeCall();
    server.attach(call as never);
    register(node, 1);
    await clock.advance(COALESCE_MS);
    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'], node: { id: 'c1' } });
    ackLast(call, TYPE_URLS.endpoints);
    expect(xds.operation('StreamAggregatedResources').count('ok')).toBe(2);
    expect([...metrics.xds.entries()].find((entry) => entry.type === 'endpoint')).toEqual({ type: 'endpoint', acks: 1, nacks: 0 });
    expect(xds.pushes.sent).toBe(0);

    register(node, 2);
    await clock.advance(COALESCE_MS);
    expect(call.responses).toHaveLength(2);
    // One response pushed, 50 ms (the coalescing window) after the change.
    expect(xds.pushes.sent).toBe(1);
    expect(xds.pushes.delaySum).toBeCloseTo(COALESCE_MS / 1000, 6);
    expect(delayBucketOf(metrics)).toBe(0.05);

    call.send({ type_url: TYPE_URLS.endpoints, resource_names: ['greeter'], version_info: '', response_nonce: call.last().nonce, error_detail: { code: 3, message: 'no' } });
    expect([...metrics.xds.entries()].find((entry) => entry.type === 'endpoint')).toEqual({ type: 'endpoint', acks: 1, nacks: 1 });
    expect(xds.operation('StreamAggregatedResources').count('ok')).toBe(3);
  });

  it('shows the streams as the held pool, a stream refused at the cap, and a refused request by its gRPC status', async () => {
    const { metrics, xds, server } = await setUp(1);
    const pool = xds.pools.get('streams')!;
    const first = new FakeCall('10.0.0.7:5000');
    server.attach(first as never);
    expect(pool.source.held).toBe(1);
    expect(pool.source.heaviest(5)).toEqual([{ owner: 'address:10.0.0.7', held: 1 }]);
    const second = new FakeCall('10.0.0.8:5000');
    server.attach(second as never);
    expect(second.errors[0]?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(pool.refusedAtPeerCap).toBe(1);
    expect(xds.operation('StreamAggregatedResources').count('limited')).toBe(1);

    // A request past the bound ends the stream with INVALID_ARGUMENT: a bad_input request.
    first.send({ type_url: TYPE_URLS.endpoints, resource_names: Array.from({ length: MAX_RESOURCE_NAMES + 1 }, (_, i) => `s${i}`) });
    expect(first.errors[0]?.code).toBe(status.INVALID_ARGUMENT);
    expect(xds.operation('StreamAggregatedResources').count('bad_input')).toBe(1);
    expect(pool.source.held).toBe(0);
    expect(metrics.adapter('xds').totals()).toMatchObject({ requests: 2, refusedAtCap: 1, held: 0 });
  });

  it('counts incremental requests and their ACKs under DeltaAggregatedResources', async () => {
    const { node, clock, metrics, xds, server } = await setUp();
    register(node, 1);
    await clock.advance(COALESCE_MS);
    const call = new FakeDeltaCall();
    server.attachDelta(call as never);
    call.send({ type_url: TYPE_URLS.cluster, resource_names_subscribe: ['greeter'], node: { id: 'd1' } });
    call.send({ type_url: TYPE_URLS.cluster, response_nonce: call.last().nonce });
    expect(xds.operation('DeltaAggregatedResources').count('ok')).toBe(2);
    expect([...metrics.xds.entries()].find((entry) => entry.type === 'cluster')).toEqual({ type: 'cluster', acks: 1, nacks: 0 });
  });

  it('maps gRPC statuses to the six outcomes', () => {
    expect(outcomeOfGrpcStatus(status.OK)).toBe('ok');
    expect(outcomeOfGrpcStatus(status.INVALID_ARGUMENT)).toBe('bad_input');
    expect(outcomeOfGrpcStatus(status.UNAUTHENTICATED)).toBe('unauthenticated');
    expect(outcomeOfGrpcStatus(status.PERMISSION_DENIED)).toBe('forbidden');
    expect(outcomeOfGrpcStatus(status.RESOURCE_EXHAUSTED)).toBe('limited');
    expect(outcomeOfGrpcStatus(status.INTERNAL)).toBe('error');
  });
});
