import type { InstanceView } from '../registry/view.js';
import type { StoredInstance } from '../registry/types.js';
import { aggregateStatus, checksOf, tagsOf, userMetaOf, warningWeightOf, type CheckStatus } from './fields.js';

/**
 * Consul's JSON shapes (agent services, catalog services, health entries, health checks) built
 * from our instances. Field names and their order follow what a Consul 1.x agent answers, so
 * clients that decode strictly (Go's api package, ecwid's consul-api in Spring Cloud Consul,
 * brpc's rapidjson reader) find what they expect. A Consul "node" is the instance's host: one
 * node per host, as Consul has one agent per host.
 */

/** The node check every Consul node has; this registry knows a host only through its instances' leases. */
const SERF_CHECK_ID = 'serfHealth';

/** One check of an instance as Consul shows it. */
export interface ConsulCheck {
  Node: string;
  CheckID: string;
  Name: string;
  Status: CheckStatus;
  Notes: string;
  Output: string;
  ServiceID: string;
  ServiceName: string;
  ServiceTags: string[];
  Type: string;
  Interval: string;
  Timeout: string;
  ExposedPort: number;
  Definition: Record<string, never>;
  CreateIndex: number;
  ModifyIndex: number;
}

/** What the encodings of one instance are built from. */
export interface ConsulInstance {
  id: string;
  service: string;
  host: string;
  port: number;
  zone: string;
  /** The instance's Datacenter: its region, or the reading peer's when its zone names none. */
  datacenter: string;
  tags: string[];
  meta: Record<string, string>;
  weights: { Passing: number; Warning: number };
  /** Every check of the service instance is passing (what `?passing` keeps). */
  passing: boolean;
  checks: ConsulCheck[];
  index: number;
}

/** The checks Consul would show for an instance: its TTL checks, or one made from its status. */
function checksFor(entry: StoredInstance, view: InstanceView, tags: string[]): ConsulCheck[] {
  const { data } = entry.record;
  const base = (checkId: string, name: string, status: CheckStatus, output: string, notes: string, type: string): ConsulCheck => ({
    Node: data.host,
    CheckID: checkId,
    Name: name,
    Status: status,
    Notes: notes,
    Output: output,
    ServiceID: view.instanceId,
    ServiceName: view.service,
    ServiceTags: tags,
    Type: type,
    Interval: '',
    Timeout: '',
    ExposedPort: 0,
    Definition: {},
    CreateIndex: entry.revision,
    ModifyIndex: entry.revision,
  });
  const stored = checksOf(data);
  if (stored.length === 0) {
    // Registered through /v1 or Eureka: one check that says what the registry knows, its status and lease.
    const status: CheckStatus = data.status === 'UP' ? 'passing' : 'critical';
    return [base(`service:${view.instanceId}`, 'Registry status and lease', status, `status ${data.status}, lease ${view.leaseLive ? 'live' : 'held'}`, '', '')];
  }
  const checks = stored.map((check) => base(check.id, check.name, check.status, check.output, check.notes, 'ttl'));
  // A status set through /v1 or Eureka (OUT_OF_SERVICE, say) shows as Consul's maintenance mode.
  if (data.status !== 'UP' && aggregateStatus(stored) !== 'critical') {
    checks.push(base(`_service_maintenance:${view.instanceId}`, 'Service Maintenance Mode', 'critical', '', `status ${data.status} in the registry`, 'maintenance'));
  }
  return checks;
}

/** The Consul form of one served instance. */
export function consulInstance(entry: StoredInstance, view: InstanceView, localDatacenter: string): ConsulInstance {
  const { data } = entry.record;
  const { metadata } = data;
  const tags = tagsOf(data);
  const checks = checksFor(entry, view, tags);
  return {
    id: view.instanceId,
    service: view.service,
    host: view.host,
    port: view.port,
    zone: view.zone,
    datacenter: view.region ?? localDatacenter,
    tags,
    meta: userMetaOf(metadata),
    weights: { Passing: view.weight, Warning: warningWeightOf(data) },
    passing: checks.every((check) => check.Status === 'passing'),
    checks,
    index: entry.revision,
  };
}

function taggedAddresses(host: string): Record<string, string> {
  return { lan: host, wan: host };
}

// The node fields are written out in each shape rather than spread from one helper: an object
// literal that starts with a spread is built as a copy and then grown one property at a time,
// and JSON.stringify of it took 35 us against 6 us for the same fields written out (a 500-byte
// catalog entry, `npx tsx bench/json-shapes.ts`): every instance of a Consul encoding pays it.

function nodeOf(instance: ConsulInstance): Record<string, unknown> {
  return {
    ID: '',
    Node: instance.host,
    Address: instance.host,
    Datacenter: instance.datacenter,
    TaggedAddresses: taggedAddresses(instance.host),
    Meta: {},
    CreateIndex: instance.index,
    ModifyIndex: instance.index,
  };
}

/** `GET /v1/agent/service/:id` and each value of `GET /v1/agent/services`. */
export function agentService(instance: ConsulInstance): Record<string, unknown> {
  return {
    ID: instance.id,
    Service: instance.service,
    Tags: instance.tags,
    Meta: instance.meta,
    Port: instance.port,
    Address: instance.host,
    TaggedAddresses: {},
    Weights: instance.weights,
    EnableTagOverride: false,
    Datacenter: instance.datacenter,
  };
}

/** The `Service` of a health entry. */
function healthService(instance: ConsulInstance): Record<string, unknown> {
  return {
    ID: instance.id,
    Service: instance.service,
    Tags: instance.tags,
    Address: instance.host,
    TaggedAddresses: {},
    Meta: instance.meta,
    Port: instance.port,
    Weights: instance.weights,
    EnableTagOverride: false,
    Proxy: { MeshGateway: {}, Expose: {} },
    Connect: {},
    CreateIndex: instance.index,
    ModifyIndex: instance.index,
  };
}

/** The node check of a health entry: passing, since an instance is listed only while its lease is served. */
function serfCheck(instance: ConsulInstance): ConsulCheck {
  return {
    Node: instance.host,
    CheckID: SERF_CHECK_ID,
    Name: 'Serf Health Status',
    Status: 'passing',
    Notes: '',
    Output: 'Agent alive and reachable',
    ServiceID: '',
    ServiceName: '',
    ServiceTags: [],
    Type: '',
    Interval: '',
    Timeout: '',
    ExposedPort: 0,
    Definition: {},
    CreateIndex: instance.index,
    ModifyIndex: instance.index,
  };
}

/** One entry of `GET /v1/health/service/:name`. */
export function healthEntry(instance: ConsulInstance): Record<string, unknown> {
  return { Node: nodeOf(instance), Service: healthService(instance), Checks: [serfCheck(instance), ...instance.checks] };
}

/** One entry of `GET /v1/catalog/service/:name`. */
export function catalogService(instance: ConsulInstance): Record<string, unknown> {
  return {
    ID: '',
    Node: instance.host,
    Address: instance.host,
    Datacenter: instance.datacenter,
    TaggedAddresses: taggedAddresses(instance.host),
    NodeMeta: {},
    ServiceKind: '',
    ServiceID: instance.id,
    ServiceName: instance.service,
    ServiceTags: instance.tags,
    ServiceAddress: instance.host,
    ServiceTaggedAddresses: {},
    ServiceWeights: instance.weights,
    ServiceMeta: instance.meta,
    ServicePort: instance.port,
    ServiceEnableTagOverride: false,
    ServiceProxy: { MeshGateway: {}, Expose: {} },
    ServiceConnect: {},
    CreateIndex: instance.index,
    ModifyIndex: instance.index,
  };
}
