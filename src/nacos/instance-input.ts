import { invalid } from '../errors.js';
import type { InstanceData } from '../registry/types.js';
import { isHost, parseMetadata, type InputLimits, type LeaseBounds, type RegistrationInput } from '../registry/validate.js';
import { withNacos } from './attributes.js';
import { instanceIdOf, namespaceOfNacos, parseServiceName, zoneOfCluster } from './names.js';

/** Request parameters as Nacos clients send them: query string and form fields, every value a string. */
export type NacosParams = Record<string, string | undefined>;

/** What the Nacos adapter needs of the cluster's settings to read an instance. */
export interface NacosInputLimits {
  input: InputLimits;
  lease: LeaseBounds;
  heartbeatIntervalMs: number;
}

/** Nacos's own metadata keys for an instance's beat interval and the time after which it is removed (ms). */
export const PRESERVED_BEAT_INTERVAL = 'preserved.heart.beat.interval';
export const PRESERVED_DELETE_TIMEOUT = 'preserved.ip.delete.timeout';

/** A Nacos boolean parameter (`true`/`false`), or `fallback` when absent. */
export function booleanParam(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (value === 'true' || value === true) return true;
  if (value === 'false' || value === false) return false;
  throw invalid(field, 'must be true or false');
}

/** A port from a parameter (a string of digits, or a number in a beat's JSON). */
export function portParam(field: string, value: unknown): number {
  const port = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw invalid(field, 'must be a port from 1 to 65535');
  return port;
}

/** An IP address or host name. */
export function ipParam(value: unknown): string {
  if (typeof value !== 'string' || value === '') throw invalid('ip', 'is required');
  if (value.length > 253 || !isHost(value)) throw invalid('ip', 'must be an IP address or a host name');
  return value;
}

/** A weight from 0 to 10000 (Nacos's bounds); 1 when absent. */
export function weightParam(value: unknown): number {
  if (value === undefined || value === '') return 1;
  const weight = typeof value === 'number' ? value : typeof value === 'string' && value.length <= 32 ? Number(value) : NaN;
  if (!Number.isFinite(weight) || weight < 0 || weight > 10_000) throw invalid('weight', 'must be a number from 0 to 10000');
  return weight;
}

/**
 * Nacos metadata: a JSON object (a string in a form, an object in a beat or a gRPC body).
 * Nacos's metadata is a string map; numbers and booleans are kept as their text.
 */
export function metadataParam(value: unknown, limits: InputLimits): Record<string, string> {
  if (value === undefined || value === '' || value === null) return {};
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      throw invalid('metadata', 'must be a JSON object of string values');
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid('metadata', 'must be a JSON object of string values');
  const strings: Record<string, string> = {};
  for (const [key, item] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof item === 'number' || typeof item === 'boolean') strings[key] = String(item);
    else if (typeof item === 'string') strings[key] = item;
    else throw invalid(`metadata.${key.slice(0, 32)}`, 'must be a string');
  }
  return parseMetadata('metadata', strings, limits);
}

function durationFromMetadata(metadata: Record<string, string>, key: string): number | undefined {
  const value = metadata[key];
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw invalid(`metadata.${key}`, 'must be a number of milliseconds');
  return Number(value);
}

/**
 * The lease and beat interval of an instance: Nacos's `preserved.ip.delete.timeout` and
 * `preserved.heart.beat.interval` metadata when given (kept within the cluster's lease bounds),
 * else the cluster's `leaseDurationMs` and `heartbeatIntervalMs`.
 */
export function leaseOf(metadata: Record<string, string>, limits: NacosInputLimits): { leaseDurationMs: number; renewalIntervalMs: number } {
  const { minLeaseDurationMs, maxLeaseDurationMs, leaseDurationMs } = limits.lease;
  const asked = durationFromMetadata(metadata, PRESERVED_DELETE_TIMEOUT);
  const lease = asked === undefined ? leaseDurationMs : Math.min(maxLeaseDurationMs, Math.max(minLeaseDurationMs, asked));
  const beat = durationFromMetadata(metadata, PRESERVED_BEAT_INTERVAL);
  const renewalIntervalMs = Math.max(100, Math.min(beat ?? limits.heartbeatIntervalMs, lease));
  return { leaseDurationMs: lease, renewalIntervalMs };
}

/** The fields of one Nacos instance, from a form, a beat or a gRPC body. */
export interface NacosInstanceFields {
  namespaceId?: unknown;
  serviceName?: unknown;
  groupName?: unknown;
  ip?: unknown;
  port?: unknown;
  clusterName?: unknown;
  weight?: unknown;
  healthy?: unknown;
  enabled?: unknown;
  ephemeral?: unknown;
  metadata?: unknown;
}

/**
 * A Nacos register as the registry's input. Persistent instances (`ephemeral: false`) are
 * refused: Nacos keeps them until deregistered and probes them from the server, which this
 * registry does not do; a lease that ran out would silently drop them (docs/nacos.md).
 */
export function registrationOfNacos(fields: NacosInstanceFields, limits: NacosInputLimits): RegistrationInput {
  if (!booleanParam('ephemeral', fields.ephemeral, true)) {
    throw invalid('ephemeral', 'persistent instances (ephemeral=false) are not served: register ephemeral instances, which heartbeat (docs/nacos.md)');
  }
  const namespace = namespaceOfNacos(fields.namespaceId);
  const { group, service } = parseServiceName(fields.serviceName, fields.groupName);
  const host = ipParam(fields.ip);
  const port = portParam('port', fields.port);
  const metadata = metadataParam(fields.metadata, limits.input);
  const { leaseDurationMs, renewalIntervalMs } = leaseOf(metadata, limits);
  const core: InstanceData = {
    host,
    port,
    securePort: null,
    status: 'UP',
    weight: weightParam(fields.weight),
    zone: zoneOfCluster(fields.clusterName),
    metadata,
    renewalIntervalMs,
  };
  if (group !== 'DEFAULT_GROUP') core.group = group;
  const data = withNacos(core, { healthy: booleanParam('healthy', fields.healthy, true), enabled: booleanParam('enabled', fields.enabled, true) });
  return { namespace, service, instanceId: instanceIdOf(host, port), data, leaseDurationMs };
}
