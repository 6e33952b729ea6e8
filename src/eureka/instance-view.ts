import { eurekaOf } from './attributes.js';
import { wallMsOf } from '../clock/hlc.js';
import type { StoredInstance } from '../registry/types.js';
import { DEFAULT_DATA_CENTER_CLASS } from './instance-input.js';

/**
 * Our records as Eureka writes instances and applications: the JSON shape of Netflix Eureka's
 * Jackson codec (field order included), from which xml.ts derives the XML one. Instances
 * registered through `/v1` get Eureka's defaults for what they never said (data centre
 * `MyOwn`, VIP address = service name, `ipAddr` = host).
 */

export type ActionType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * The instance's metadata as Eureka clients read it. Spring Cloud's zone preference reads the
 * zone from `metadata.zone`, so an instance's zone goes there when its metadata has none.
 */
function eurekaMetadata(metadata: Record<string, string>, zone: string): Record<string, string> {
  const withZone = zone !== '' && metadata.zone === undefined ? { ...metadata, zone } : metadata;
  return Object.keys(withZone).length === 0 ? { '@class': EMPTY_MAP_CLASS } : withZone;
}

/** Java's type hint for an empty metadata map, which Eureka clients expect. */
export const EMPTY_MAP_CLASS = 'java.util.Collections$EmptyMap';
export const DEFAULT_SECURE_PORT = 443;

export interface EurekaPort {
  $: number;
  '@enabled': 'true' | 'false';
}

export interface EurekaInstanceJson {
  instanceId: string;
  hostName: string;
  app: string;
  ipAddr: string;
  status: string;
  overriddenStatus: string;
  port: EurekaPort;
  securePort: EurekaPort;
  countryId: number;
  dataCenterInfo: Record<string, unknown>;
  leaseInfo: {
    renewalIntervalInSecs: number;
    durationInSecs: number;
    registrationTimestamp: number;
    lastRenewalTimestamp: number;
    evictionTimestamp: number;
    serviceUpTimestamp: number;
  };
  metadata: Record<string, string>;
  homePageUrl?: string;
  statusPageUrl?: string;
  healthCheckUrl?: string;
  secureHealthCheckUrl?: string;
  vipAddress?: string;
  secureVipAddress?: string;
  isCoordinatingDiscoveryServer: 'false';
  lastUpdatedTimestamp: string;
  lastDirtyTimestamp: string;
  actionType: ActionType;
}

export interface EurekaApplicationJson {
  name: string;
  instance: EurekaInstanceJson[];
}

export interface EurekaApplicationsJson {
  versions__delta: string;
  apps__hashcode: string;
  application: EurekaApplicationJson[];
}

/** The app name Eureka shows for a service: upper-cased, as Eureka does. */
export function appNameOf(service: string): string {
  return service.toUpperCase();
}

function port(value: number, enabled: boolean): EurekaPort {
  return { $: value, '@enabled': enabled ? 'true' : 'false' };
}

/** What a view needs that a record does not say. */
export interface ViewDefaults {
  /** Renewal interval shown for instances registered through `/v1` (they heartbeat at `cluster.heartbeatIntervalMs`). */
  renewalIntervalSecs: number;
}

/** The fields Eureka writes only when known, in its order. */
function optionalFields(fields: Record<string, string | null | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(fields)) if (typeof value === 'string' && value !== '') out[name] = value;
  return out;
}

/**
 * When the instance last renewed, as Eureka shows it. We keep the lease's end, not its last
 * renewal; on the peer holding the lease the renewal is one lease before the end.
 * Informational: clients do not act on it.
 */
export function lastRenewalMsOf(entry: StoredInstance): number {
  return Math.max(entry.record.registeredAtMs, entry.leaseExpiresAtMs - entry.record.leaseDurationMs);
}

/** `leaseInfo.durationInSecs`: whole seconds, at least 1. */
export function durationSecsOf(leaseDurationMs: number): number {
  return Math.max(1, Math.round(leaseDurationMs / 1000));
}

/** The action outside deltas: whether the last write was the first registration. */
export function defaultActionType(lastUpdatedMs: number, registeredAtMs: number): ActionType {
  return lastUpdatedMs === registeredAtMs ? 'ADDED' : 'MODIFIED';
}

/**
 * One instance in Eureka's shape. `actionType` matters in deltas only; elsewhere it says
 * whether the last write was the first registration (ADDED) or a later change (MODIFIED).
 */
export function toEurekaInstance(entry: StoredInstance, defaults: ViewDefaults, actionType?: ActionType): EurekaInstanceJson {
  const { record } = entry;
  const { data } = record;
  const eureka = eurekaOf(data);
  const lastUpdatedMs = wallMsOf(record.version);
  const lastRenewalMs = lastRenewalMsOf(entry);
  const dataCenter = eureka?.dataCenterInfo;
  const dataCenterInfo: Record<string, unknown> = {
    '@class': dataCenter?.className ?? DEFAULT_DATA_CENTER_CLASS,
    name: dataCenter?.name ?? 'MyOwn',
  };
  if (dataCenter && Object.keys(dataCenter.metadata).length > 0) dataCenterInfo.metadata = dataCenter.metadata;
  return {
    instanceId: record.instanceId,
    hostName: eureka?.hostName ?? data.host,
    app: appNameOf(record.service),
    ipAddr: eureka?.ipAddr ?? data.host,
    status: data.status,
    overriddenStatus: eureka?.overriddenStatus ?? 'UNKNOWN',
    port: port(data.port, eureka?.portEnabled ?? true),
    securePort: port(data.securePort ?? eureka?.securePort ?? DEFAULT_SECURE_PORT, data.securePort !== null),
    countryId: eureka?.countryId ?? 1,
    dataCenterInfo,
    leaseInfo: {
      renewalIntervalInSecs: eureka?.renewalIntervalSecs ?? defaults.renewalIntervalSecs,
      durationInSecs: durationSecsOf(record.leaseDurationMs),
      registrationTimestamp: record.registeredAtMs,
      lastRenewalTimestamp: lastRenewalMs,
      evictionTimestamp: 0,
      serviceUpTimestamp: record.registeredAtMs,
    },
    metadata: eurekaMetadata(data.metadata, data.zone),
    ...optionalFields({
      homePageUrl: eureka?.homePageUrl,
      statusPageUrl: eureka?.statusPageUrl,
      healthCheckUrl: eureka?.healthCheckUrl,
      secureHealthCheckUrl: eureka?.secureHealthCheckUrl,
      vipAddress: eureka ? eureka.vipAddress : record.service,
      secureVipAddress: eureka ? eureka.secureVipAddress : record.service,
    }),
    isCoordinatingDiscoveryServer: 'false',
    lastUpdatedTimestamp: String(lastUpdatedMs),
    lastDirtyTimestamp: String(eureka?.lastDirtyTimestampMs ?? lastUpdatedMs),
    actionType: actionType ?? defaultActionType(lastUpdatedMs, record.registeredAtMs),
  };
}

/**
 * Eureka's reconcile hash code: `STATUS_count_` for every status present, in status order
 * (`DOWN_1_UP_3_`); empty for no instance. A client compares it with the hash of its own copy
 * after a delta, and fetches everything again when they differ.
 */
export function reconcileHashCode(statuses: Iterable<string>): string {
  const counts = new Map<string, number>();
  for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
  return [...counts.keys()]
    .sort()
    .map((status) => `${status}_${counts.get(status)}_`)
    .join('');
}
