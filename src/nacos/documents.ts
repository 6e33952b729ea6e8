import { groupOf, type StoredInstance } from '../registry/types.js';
import type { StableView } from '../views/service-views.js';
import { flagsOf } from './attributes.js';
import { clusterOfZone, groupedName } from './names.js';

/**
 * Nacos's JSON shapes of instances and services (what `/instance/list`, UDP pushes and the
 * gRPC `ServiceInfo` carry), built from the read layer's stable views: the hosts of a view are
 * encoded once per change (`nacosHostsOf`, a view encoding) and shared by every list, push and
 * subscription, each answer only wrapping them in its own envelope.
 */

/** How often Nacos clients are told to list again (`cacheMillis`), in ms: Nacos's value for push clients. */
export const CACHE_MILLIS = 10_000;

/** One instance as Nacos clients read it. */
export interface NacosHost {
  instanceId: string;
  ip: string;
  port: number;
  weight: number;
  healthy: boolean;
  enabled: boolean;
  ephemeral: boolean;
  clusterName: string;
  serviceName: string;
  metadata: Record<string, string>;
  instanceHeartBeatInterval: number;
  instanceHeartBeatTimeOut: number;
  ipDeleteTimeout: number;
  instanceIdGenerator: string;
}

/** The Nacos form of a stored instance. `beatIntervalMs` is the peer's when the instance declared none. */
export function nacosHostOf(entry: StoredInstance, beatIntervalMs: number): NacosHost {
  const { record } = entry;
  const { data } = record;
  const flags = flagsOf(data);
  const interval = data.renewalIntervalMs ?? beatIntervalMs;
  return {
    instanceId: record.instanceId,
    ip: data.host,
    port: data.port,
    weight: data.weight,
    healthy: flags.healthy,
    enabled: flags.enabled,
    ephemeral: true,
    clusterName: clusterOfZone(data.zone),
    serviceName: groupedName(groupOf(data), record.service),
    metadata: data.metadata,
    instanceHeartBeatInterval: interval,
    instanceHeartBeatTimeOut: Math.min(record.leaseDurationMs, interval * 3),
    ipDeleteTimeout: record.leaseDurationMs,
    instanceIdGenerator: 'simple',
  };
}

/** One encoded host, with what the filters of a list look at. */
interface EncodedHost {
  zone: string;
  healthy: boolean;
  host: NacosHost;
  json: string;
}

/** Most list answers kept per view (one per name, group, clusters and healthyOnly asked); others are built per request. */
const LIST_BODIES_MAX = 32;

/**
 * The hosts of a view by group, encoded once; the unfiltered JSON array of a group, and the
 * bytes of the list answers asked of this view, are kept on first use and shared until the
 * service changes.
 */
export class NacosHosts {
  private readonly whole = new Map<string, string>();
  private readonly bodies = new Map<string, Buffer>();

  constructor(
    readonly revision: number,
    /** When the view was built: the `lastRefTime` of what is served from it. */
    readonly builtAtMs: number,
    private readonly byGroup: ReadonlyMap<string, readonly EncodedHost[]>,
  ) {}

  /**
   * The `/instance/list` answer (bytes) for `name` as asked, its group and clusters filter:
   * the same for every reader of this view, so a list costs a lookup, not an encoding of the
   * service (356 KB for 1,000 instances).
   */
  listBody(name: string, group: string, clusters: string, zones: ReadonlySet<string> | null, healthyOnly: boolean): Buffer {
    const key = `${name}\n${group}\n${clusters}\n${healthyOnly}`;
    let body = this.bodies.get(key);
    if (body === undefined) {
      body = Buffer.from(serviceInfoJson(this.json(group, zones, healthyOnly), { name, groupName: group, clusters, lastRefTimeMs: this.builtAtMs, checksum: String(this.revision) }));
      if (this.bodies.size < LIST_BODIES_MAX) this.bodies.set(key, body);
    }
    return body;
  }

  /** The hosts of `group` in zones `zones` (null: all), only healthy ones with `healthyOnly`. */
  select(group: string, zones: ReadonlySet<string> | null, healthyOnly: boolean): EncodedHost[] {
    const hosts = this.byGroup.get(group) ?? [];
    if (zones === null && !healthyOnly) return hosts as EncodedHost[];
    return hosts.filter((item) => (zones === null || zones.has(item.zone)) && (!healthyOnly || item.healthy));
  }

  /** The JSON array of the selected hosts. */
  json(group: string, zones: ReadonlySet<string> | null, healthyOnly: boolean): string {
    if (zones === null && !healthyOnly) {
      let whole = this.whole.get(group);
      if (whole === undefined) this.whole.set(group, (whole = joinHosts(this.byGroup.get(group) ?? [])));
      return whole;
    }
    return joinHosts(this.select(group, zones, healthyOnly));
  }
}

function joinHosts(hosts: readonly EncodedHost[]): string {
  return `[${hosts.map((item) => item.json).join(',')}]`;
}

/** The name of the Nacos hosts encoding of a stable view. */
export const NACOS_HOSTS_ENCODING = 'nacos-hosts';

/** Builds the Nacos hosts of a view (once per change: pass it to `views.stableEncoding`). */
export function buildNacosHosts(view: StableView, beatIntervalMs: number): NacosHosts {
  const byGroup = new Map<string, EncodedHost[]>();
  for (const entry of view.served) {
    const host = nacosHostOf(entry, beatIntervalMs);
    const group = groupOf(entry.record.data);
    let list = byGroup.get(group);
    if (!list) byGroup.set(group, (list = []));
    list.push({ zone: entry.record.data.zone, healthy: host.healthy, host, json: JSON.stringify(host) });
  }
  return new NacosHosts(view.revision, view.builtAtMs, byGroup);
}

/** What a service answer says beside its hosts. */
export interface ServiceEnvelope {
  /** `GROUP@@name` as the client asked for it: its clients key their caches by it. */
  name: string;
  groupName: string;
  /** The `clusters` filter as asked (empty for every cluster). */
  clusters: string;
  lastRefTimeMs: number;
  checksum: string;
}

/** A service as `/instance/list` answers it and a UDP push carries it (JSON text). */
export function serviceInfoJson(hostsJson: string, envelope: ServiceEnvelope): string {
  const head = `{"name":${JSON.stringify(envelope.name)},"groupName":${JSON.stringify(envelope.groupName)},"clusters":${JSON.stringify(envelope.clusters)},"cacheMillis":${CACHE_MILLIS},"hosts":`;
  return `${head}${hostsJson},"lastRefTime":${envelope.lastRefTimeMs},"checksum":${JSON.stringify(envelope.checksum)},"allIPs":false,"reachProtectionThreshold":false,"valid":true}`;
}
