import { isIP } from 'node:net';
import type { XdsLbPolicy } from './declaration.js';
import type { InstanceView } from '../registry/view.js';
import { resourceNameOf } from './names.js';
import { HTTP_CONNECTION_MANAGER_TYPE_URL, ROUTER_TYPE_URL, TYPE_URLS, type AnyMessage, type XdsProtos } from './protos.js';

/** What a service's resources depend on beyond its view. */
export interface ResourceSettings {
  lbPolicy: XdsLbPolicy;
}

/** The three resources of one service, encoded once per view and shared by every ADS stream. */
export interface ServiceResources {
  name: string;
  listener: AnyMessage;
  cluster: AnyMessage;
  endpoints: AnyMessage;
  /** Instances left out of the ClusterLoadAssignment and why (a gRPC client would reject all of it). */
  skipped: { notAnIp: number; duplicateAddress: number };
}

/**
 * gRPC's ring_hash caps its ring at 4,096 entries unless the client raises
 * `grpc.lb.ring_hash.ring_size_cap`; asking for that many keeps each endpoint's share of the
 * ring within a few percent of its weight's share (a 1,024-entry ring, the default, is off by
 * about 6% for an endpoint with a quarter of the weight).
 */
export const RING_MIN_SIZE = 4_096;
const UINT32_MAX = 0xffff_ffff;

/**
 * The Listener a gRPC client resolves `xds:///name` to: an API listener holding the HTTP
 * connection manager `manager` (see httpConnectionManagerOf).
 */
export function listenerOf(name: string, manager: AnyMessage): Record<string, unknown> {
  return { name, api_listener: { api_listener: manager } };
}

/**
 * The HTTP connection manager: the route configuration inline (no RDS round trip), every path
 * to the service's cluster, and the router filter (`router`, an encoded Router) last, as
 * gRPC requires.
 */
export function httpConnectionManagerOf(name: string, router: AnyMessage): Record<string, unknown> {
  return { stat_prefix: name, route_config: routeConfigurationOf(name), http_filters: [{ name: 'envoy.filters.http.router', typed_config: router }] };
}

export function routeConfigurationOf(name: string): Record<string, unknown> {
  return {
    name,
    virtual_hosts: [{ name, domains: ['*'], routes: [{ name: 'default', match: { prefix: '' }, route: { cluster: name } }] }],
  };
}

/** The Cluster: endpoints by EDS over the same ADS stream, balanced as `lbPolicy` says. */
export function clusterOf(name: string, lbPolicy: XdsLbPolicy): Record<string, unknown> {
  const balancing =
    lbPolicy === 'ring_hash'
      ? { lb_policy: 'RING_HASH', ring_hash_lb_config: { minimum_ring_size: { value: RING_MIN_SIZE }, hash_function: 'XX_HASH' } }
      : { lb_policy: 'ROUND_ROBIN' };
  return {
    name,
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
    connect_timeout: { seconds: 5, nanos: 0 },
    ...balancing,
  };
}

/**
 * An instance's weight as xDS carries it: a whole number of at least 1 (0 and fractions are
 * not allowed there); instances of weight 0 take no calls and are left out before this.
 */
export function endpointWeightOf(weight: number): number {
  return Math.min(UINT32_MAX, Math.max(1, Math.round(weight)));
}

/** What the ClusterLoadAssignment takes of an instance (a native InstanceView has it all). */
export type EndpointSource = Pick<InstanceView, 'host' | 'port' | 'status' | 'weight' | 'zone' | 'region'>;

/** What a service's resources are built from: its name and its served instances. */
export interface ServiceSource {
  readonly namespace: string;
  readonly service: string;
  readonly instances: readonly EndpointSource[];
}

interface Locality {
  region: string;
  zone: string;
  members: EndpointSource[];
}

/**
 * The ClusterLoadAssignment: the UP instances of the view (served: a live lease, or one an
 * eviction guard holds, as /v1 lists them) with a weight above 0, one locality per region and
 * zone, each endpoint weighted by its instance's weight. gRPC rejects a whole assignment
 * holding a host that is not an IP address or an address twice, so those instances are left
 * out (and counted). With ring_hash every locality weighs 1: gRPC multiplies locality and
 * endpoint weights there, so equal localities keep each endpoint's share its own weight's. With
 * round_robin a locality weighs the sum of its endpoints' weights, its share of the calls.
 */
export function endpointsOf(name: string, instances: readonly EndpointSource[], lbPolicy: XdsLbPolicy): { assignment: Record<string, unknown>; skipped: ServiceResources['skipped'] } {
  const skipped = { notAnIp: 0, duplicateAddress: 0 };
  const seen = new Set<string>();
  const localities = new Map<string, Locality>();
  let total = 0;
  for (const instance of instances) {
    if (instance.status !== 'UP' || instance.weight <= 0) continue;
    if (isIP(instance.host) === 0) {
      skipped.notAnIp += 1;
      continue;
    }
    const address = `${instance.host}|${instance.port}`;
    if (seen.has(address)) {
      skipped.duplicateAddress += 1;
      continue;
    }
    seen.add(address);
    const region = instance.region ?? '';
    const key = `${region}\u0000${instance.zone}`;
    let locality = localities.get(key);
    if (!locality) localities.set(key, (locality = { region, zone: instance.zone, members: [] }));
    locality.members.push(instance);
    total += endpointWeightOf(instance.weight);
  }
  // A priority's weights must add up to a uint32: scale them down when they would not.
  const scale = total > UINT32_MAX ? UINT32_MAX / total : 1;
  const weightOf = (instance: EndpointSource) => Math.max(1, Math.floor(endpointWeightOf(instance.weight) * scale));
  const endpoints = [...localities.values()]
    .sort((a, b) => (a.region === b.region ? (a.zone < b.zone ? -1 : a.zone > b.zone ? 1 : 0) : a.region < b.region ? -1 : 1))
    .map((locality) => {
      const lbEndpoints = locality.members.map((instance) => ({
        endpoint: { address: { socket_address: { address: instance.host, port_value: instance.port } } },
        health_status: 'HEALTHY',
        load_balancing_weight: { value: weightOf(instance) },
      }));
      const localityWeight = lbPolicy === 'ring_hash' ? 1 : lbEndpoints.reduce((sum, endpoint) => sum + endpoint.load_balancing_weight.value, 0);
      return {
        locality: { region: locality.region, zone: locality.zone },
        lb_endpoints: lbEndpoints,
        load_balancing_weight: { value: Math.min(UINT32_MAX, localityWeight) },
        priority: 0,
      };
    });
  return { assignment: { cluster_name: name, endpoints }, skipped };
}

/** Builds and encodes a service's Listener, Cluster and ClusterLoadAssignment from its served instances. */
export function buildServiceResources(view: ServiceSource, protos: XdsProtos, settings: ResourceSettings): ServiceResources {
  const name = resourceNameOf(view.namespace, view.service);
  const manager = protos.pack(HTTP_CONNECTION_MANAGER_TYPE_URL, httpConnectionManagerOf(name, protos.pack(ROUTER_TYPE_URL, {})));
  const { assignment, skipped } = endpointsOf(name, view.instances, settings.lbPolicy);
  return {
    name,
    listener: protos.pack(TYPE_URLS.listener, listenerOf(name, manager)),
    cluster: protos.pack(TYPE_URLS.cluster, clusterOf(name, settings.lbPolicy)),
    endpoints: protos.pack(TYPE_URLS.endpoints, assignment),
    skipped,
  };
}
