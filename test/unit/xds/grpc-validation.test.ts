import { createRequire } from 'node:module';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseRegistration } from '../../../src/registry/validate.js';
import { XdsProtos } from '../../../src/xds/protos.js';
import { buildServiceResources, type ServiceResources } from '../../../src/xds/resources.js';
import { createTestNode } from '../../support/node.js';

/**
 * What the registry builds passes the validation of the real client, @grpc/grpc-js-xds 1.14
 * (its resource types' own `decode`, the code that NACKs), for both balancing policies: the
 * end-to-end test shows the same with a whole client; this one pins each resource type.
 */
const require = createRequire(import.meta.url);
type Decoder = { get(): { decode(context: unknown, resource: unknown): { name: string; value?: Record<string, any>; error?: string } } };
const load = (path: string, name: string) => (require(`@grpc/grpc-js-xds/build/src/${path}`) as Record<string, Decoder>)[name]!.get();

let protos: XdsProtos;
let built: Record<'ring_hash' | 'round_robin', ServiceResources>;
const context = { bootstrap: { certificateProviders: {} }, server: {} };

beforeAll(async () => {
  // The router filter and the LB policies register themselves when the package sets up.
  (require('@grpc/grpc-js-xds') as { register(): void }).register();
  protos = new XdsProtos();
  const { node } = await createTestNode();
  for (const [port, weight] of [
    [1, 1],
    [2, 3],
  ]) {
    node.registry.register(parseRegistration({ service: 'greeter', host: '10.0.0.1', port, weight, leaseDurationMs: 60_000 }, 'default', node.config.limits, node.config.cluster));
  }
  const view = node.views.get('default', 'greeter');
  built = { ring_hash: buildServiceResources(view, protos, { lbPolicy: 'ring_hash' }), round_robin: buildServiceResources(view, protos, { lbPolicy: 'round_robin' }) };
});

describe.each(['ring_hash', 'round_robin'] as const)('grpc-js-xds accepts every resource (%s)', (policy) => {
  it('the Listener', () => {
    const result = load('xds-resource-type/listener-resource-type.js', 'ListenerResourceType').decode(context, built[policy].listener);
    expect(result.error).toBeUndefined();
    expect(result.name).toBe('greeter');
  });

  it('the Cluster, with the balancing asked for', () => {
    const result = load('xds-resource-type/cluster-resource-type.js', 'ClusterResourceType').decode(context, built[policy].cluster);
    expect(result.error).toBeUndefined();
    expect(result.value).toMatchObject({ type: 'EDS', name: 'greeter' });
    const [config] = result.value!.lbPolicyConfig;
    if (policy === 'ring_hash') expect(config).toEqual({ ring_hash: { min_ring_size: 4_096, max_ring_size: 8_388_608 } });
    else expect(config).toEqual({ xds_wrr_locality: { child_policy: [{ round_robin: {} }] } });
  });

  it('the ClusterLoadAssignment, with the weights', () => {
    const result = load('xds-resource-type/endpoint-resource-type.js', 'EndpointResourceType').decode(context, built[policy].endpoints);
    expect(result.error).toBeUndefined();
    const weights = result.value!.endpoints[0].lb_endpoints.map((lb: { load_balancing_weight: { value: number } }) => lb.load_balancing_weight.value);
    expect(weights).toEqual([1, 3]);
  });
});

describe('the validation this test relies on', () => {
  it('rejects what gRPC does not support (a least-request cluster, a host name endpoint)', () => {
    const cluster = protos.pack('type.googleapis.com/envoy.config.cluster.v3.Cluster', { name: 'x', type: 'EDS', eds_cluster_config: { eds_config: { ads: {} } }, lb_policy: 'LEAST_REQUEST' });
    expect(load('xds-resource-type/cluster-resource-type.js', 'ClusterResourceType').decode(context, cluster).error).toContain('unsupported lb_policy');
    const endpoints = protos.pack('type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment', {
      cluster_name: 'x',
      endpoints: [{ locality: {}, load_balancing_weight: { value: 1 }, lb_endpoints: [{ endpoint: { address: { socket_address: { address: 'greeter.internal', port_value: 1 } } } }] }],
    });
    expect(load('xds-resource-type/endpoint-resource-type.js', 'EndpointResourceType').decode(context, endpoints).error).toContain('not a valid IPv4 or IPv6 address');
  });
});
