import { beforeAll, describe, expect, it } from 'vitest';
import { parseRegistration } from '../../../src/registry/validate.js';
import type { InstanceView } from '../../../src/registry/view.js';
import { XdsProtos } from '../../../src/xds/protos.js';
import { buildServiceResources, endpointsOf, endpointWeightOf, RING_MIN_SIZE } from '../../../src/xds/resources.js';
import { createTestNode } from '../../support/node.js';

let protos: XdsProtos;
beforeAll(() => {
  protos = new XdsProtos();
});

async function viewWith(instances: Record<string, unknown>[], file: Record<string, unknown> = {}) {
  const { node } = await createTestNode({ file });
  for (const body of instances) {
    node.registry.register(parseRegistration({ service: 'greeter', leaseDurationMs: 60_000, ...body }, (body.namespace as string) ?? 'default', node.config.limits, node.config.cluster));
  }
  const namespace = (instances[0]?.namespace as string) ?? 'default';
  return node.views.get(namespace, 'greeter');
}

/** Decodes an Any, and the Anys nested in it, with the same proto types the registry encodes with. */
function decode(any: { type_url: string; value: Buffer }): Record<string, any> {
  return protos.unpack(any) as Record<string, any>;
}

describe('buildServiceResources', () => {
  it('builds the Listener gRPC resolves xds:///greeter to: an API listener, routes inline, router last', async () => {
    const view = await viewWith([{ host: '10.0.0.1', port: 50051 }]);
    const { listener } = buildServiceResources(view, protos, { lbPolicy: 'ring_hash' });
    expect(listener.type_url).toBe('type.googleapis.com/envoy.config.listener.v3.Listener');
    const decoded = decode(listener);
    expect(decoded.name).toBe('greeter');
    const manager = decoded.api_listener.api_listener;
    expect(manager.type_url).toBe('type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager');
    const hcm = decode(manager);
    expect(hcm.route_specifier).toBe('route_config');
    expect(hcm.route_config.virtual_hosts).toEqual([
      expect.objectContaining({ name: 'greeter', domains: ['*'], routes: [expect.objectContaining({ match: expect.objectContaining({ prefix: '' }), route: expect.objectContaining({ cluster: 'greeter' }) })] }),
    ]);
    expect(hcm.http_filters).toHaveLength(1);
    expect(hcm.http_filters[0].typed_config.type_url).toBe('type.googleapis.com/envoy.extensions.filters.http.router.v3.Router');
  });

  it('builds an EDS Cluster fed over ADS, ring_hash by default with a 4,096-entry ring', async () => {
    const view = await viewWith([{ host: '10.0.0.1', port: 50051 }]);
    const ring = decode(buildServiceResources(view, protos, { lbPolicy: 'ring_hash' }).cluster);
    expect(ring).toMatchObject({ name: 'greeter', type: 'EDS', lb_policy: 'RING_HASH', eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } } });
    expect(ring.ring_hash_lb_config).toMatchObject({ minimum_ring_size: { value: String(RING_MIN_SIZE) }, hash_function: 'XX_HASH' });
    const roundRobin = decode(buildServiceResources(view, protos, { lbPolicy: 'round_robin' }).cluster);
    expect(roundRobin.lb_policy).toBe('ROUND_ROBIN');
    expect(roundRobin.ring_hash_lb_config).toBeUndefined();
  });

  it('names the resources of another namespace greeter.<namespace>', async () => {
    const view = await viewWith([{ host: '10.0.0.1', port: 50051, namespace: 'team-a' }]);
    const built = buildServiceResources(view, protos, { lbPolicy: 'ring_hash' });
    expect(built.name).toBe('greeter.team-a');
    expect(decode(built.cluster).name).toBe('greeter.team-a');
    expect(decode(built.endpoints).cluster_name).toBe('greeter.team-a');
  });

  it('groups the UP instances into localities by region and zone, each endpoint weighted by its instance', async () => {
    const file = {
      peers: [
        { id: 'peer-a', url: 'http://127.0.0.1:8761', region: 'eu', zone: 'eu-1' },
        { id: 'peer-b', url: 'http://127.0.0.1:8762', region: 'us', zone: 'us-1' },
      ],
      id: 'peer-a',
    };
    const view = await viewWith(
      [
        { host: '10.0.0.1', port: 1, zone: 'eu-1', weight: 3 },
        { host: '10.0.0.2', port: 1, zone: 'eu-1', weight: 1 },
        { host: '10.0.0.3', port: 1, zone: 'us-1', weight: 2.4 },
        { host: '10.0.0.4', port: 1, zone: 'us-1', status: 'DOWN' },
        { host: '10.0.0.5', port: 1, zone: 'us-1', weight: 0 },
      ],
      file,
    );
    const decoded = decode(buildServiceResources(view, protos, { lbPolicy: 'round_robin' }).endpoints);
    expect(decoded.cluster_name).toBe('greeter');
    const localities = decoded.endpoints.map((locality: any) => ({
      locality: [locality.locality.region, locality.locality.zone],
      weight: locality.load_balancing_weight.value,
      endpoints: locality.lb_endpoints.map((lb: any) => [lb.endpoint.address.socket_address.address, lb.endpoint.address.socket_address.port_value, lb.load_balancing_weight.value, lb.health_status]),
    }));
    expect(localities).toEqual([
      { locality: ['eu', 'eu-1'], weight: 4, endpoints: [['10.0.0.1', 1, 3, 'HEALTHY'], ['10.0.0.2', 1, 1, 'HEALTHY']] },
      { locality: ['us', 'us-1'], weight: 2, endpoints: [['10.0.0.3', 1, 2, 'HEALTHY']] },
    ]);
    // ring_hash multiplies locality and endpoint weights: every locality then weighs the same.
    const ring = decode(buildServiceResources(view, protos, { lbPolicy: 'ring_hash' }).endpoints);
    expect(ring.endpoints.map((locality: any) => locality.load_balancing_weight.value)).toEqual([1, 1]);
  });

  it('leaves out hosts that are no IP address and addresses listed twice (gRPC would reject the whole assignment)', async () => {
    const view = await viewWith([
      { host: 'greeter.internal', port: 1, instanceId: 'a' },
      { host: '10.0.0.1', port: 1, instanceId: 'b' },
      { host: '10.0.0.1', port: 1, instanceId: 'c' },
      { host: '::1', port: 2, instanceId: 'd' },
    ]);
    const built = buildServiceResources(view, protos, { lbPolicy: 'ring_hash' });
    expect(built.skipped).toEqual({ notAnIp: 1, duplicateAddress: 1 });
    const addresses = decode(built.endpoints).endpoints.flatMap((locality: any) => locality.lb_endpoints.map((lb: any) => lb.endpoint.address.socket_address.address));
    expect(addresses).toEqual(['10.0.0.1', '::1']);
  });
});

describe('endpointWeightOf', () => {
  it.each([
    [1, 1],
    [0.2, 1],
    [2.5, 3],
    [7, 7],
    [1_000_000, 1_000_000],
  ])('carries weight %d as %d', (weight, expected) => {
    expect(endpointWeightOf(weight)).toBe(expected);
  });

  it('scales weights down when their sum would pass a uint32', () => {
    const instances = Array.from({ length: 5_000 }, (_, i) => ({ host: `10.0.${i >> 8}.${i & 255}`, port: 1, status: 'UP', weight: 1_000_000, zone: '', region: null }) as unknown as InstanceView);
    const { assignment } = endpointsOf('big', instances, 'round_robin');
    const [locality] = (assignment as any).endpoints;
    const total = locality.lb_endpoints.reduce((sum: number, lb: any) => sum + lb.load_balancing_weight.value, 0);
    expect(total).toBeLessThanOrEqual(0xffff_ffff);
    expect(locality.load_balancing_weight.value).toBe(total);
  });
});
