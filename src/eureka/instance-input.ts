import { invalid } from '../errors.js';
import { parseEurekaAttributes, type EurekaAttributes } from './attributes.js';
import type { InstanceStatus } from '../registry/types.js';
import { checkMetadataLimits, isHost, parseInstanceId, parsePort, type InputLimits, type LeaseBounds } from '../registry/validate.js';
import { parseBody } from '../schema/body-schema.js';
import { eurekaInstanceChecker, type EurekaInstanceBody } from './instance-schema.js';
import { toEurekaStatus, type RegistrationRequest } from './status-rules.js';

/**
 * Reads a Eureka register body (`{"instance": {...}}`, from JSON or XML) into our record's
 * data. Its shape is its schema's (instance-schema.ts: lenient where clients are sloppy, strict
 * about app, host name, IP address and data centre); this reads the lenient forms (a port as a
 * number, a string or `{"$": 8080, "@enabled": "true"}`; booleans and numbers as strings; a
 * missing `@class` or `lastDirtyTimestamp`) and applies the rules across fields (the id, the
 * host, the port range, the lease), answering 400 naming the field.
 */

export const DEFAULT_DATA_CENTER_CLASS = 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo';
export const AMAZON_DATA_CENTER_CLASS = 'com.netflix.appinfo.AmazonInfo';
/** Eureka's defaults when a client sends no `leaseInfo`: 90 s leases, renewed every 30 s. */
export const DEFAULT_LEASE_DURATION_SECS = 90;
export const DEFAULT_RENEWAL_INTERVAL_SECS = 30;
/** Eureka's default plain port, and the secure port Spring Cloud sends when TLS is off. */
const DEFAULT_PORT = 7001;
const DEFAULT_SECURE_PORT = 443;
const ZONE_MAX_LENGTH = 64;

/** A parsed register body: the request for `planRegistration`, plus the app and id it names. */
export interface ParsedInstance extends RegistrationRequest {
  /** The body's app, upper-cased. */
  app: string;
  instanceId: string;
}

export interface InstanceInputContext {
  limits: InputLimits;
  bounds: LeaseBounds;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

/** A string, or a number or boolean written as one; undefined for anything else or "". */
export function asText(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  return undefined;
}

/** An integer, or a string of digits; undefined for anything else. */
export function asInteger(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' && /^-?\d{1,16}$/.test(value.trim())) return Number(value.trim());
  return undefined;
}

/** A boolean, or "true"/"false" in any case; undefined for anything else. */
function asBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const lower = value.trim().toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
  }
  return undefined;
}

/** `port` / `securePort` in one of the forms its schema takes: the number, in the port range, and whether it is enabled. */
function readPort(field: string, value: unknown, fallback: number, enabledByDefault: boolean): { port: number; enabled: boolean } {
  if (value === undefined || value === null) return { port: fallback, enabled: enabledByDefault };
  const raw = isObject(value) ? value.$ : value;
  const enabled = isObject(value) && value['@enabled'] !== undefined ? asBoolean(value['@enabled']) : enabledByDefault;
  // An integer past 2^53 fits the schema's form but is no port.
  return { port: parsePort(field, asInteger(raw) ?? 0), enabled: enabled ?? enabledByDefault };
}

/** The instance's own status: UP when absent; UNKNOWN is refused (we never store it). */
function readStatus(value: unknown): InstanceStatus {
  if (value === undefined || value === null || value === '') return 'UP';
  const status = toEurekaStatus(value);
  if (status === undefined || status === 'UNKNOWN') throw invalid('instance.status', 'must be one of UP, DOWN, STARTING, OUT_OF_SERVICE');
  return status;
}

/** The override: null when absent or UNKNOWN (Eureka's "none"). */
function readOverride(value: unknown): InstanceStatus | null {
  if (value === undefined || value === null || value === '') return null;
  const status = toEurekaStatus(value);
  if (status === undefined) throw invalid('instance.overriddenStatus', 'must be one of UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN');
  return status === 'UNKNOWN' ? null : status;
}

/** A string map of the form its schema takes; numbers and booleans become strings, `@class` (a Java type hint) is dropped. */
function readStringMap(value: unknown): Record<string, string> {
  if (!isObject(value)) return {};
  const out: [string, string][] = [];
  for (const [key, item] of Object.entries(value)) {
    if (key !== '@class') out.push([key, asText(item) ?? '']);
  }
  return Object.fromEntries(out) as Record<string, string>;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

function readLease(value: unknown, bounds: LeaseBounds): { leaseDurationMs: number; renewalIntervalSecs: number } {
  const lease = isObject(value) ? value : {};
  const durationSecs = asInteger(lease.durationInSecs);
  const renewalSecs = asInteger(lease.renewalIntervalInSecs);
  const seconds = durationSecs !== undefined && durationSecs > 0 ? durationSecs : DEFAULT_LEASE_DURATION_SECS;
  return {
    // Honoured within the cluster's bounds, not refused: a Eureka client cannot fix a 400.
    leaseDurationMs: clamp(seconds * 1000, bounds.minLeaseDurationMs, bounds.maxLeaseDurationMs),
    renewalIntervalSecs:
      renewalSecs !== undefined && renewalSecs > 0 ? Math.min(renewalSecs, 86_400) : DEFAULT_RENEWAL_INTERVAL_SECS,
  };
}

function readDataCenter(value: Json): EurekaAttributes['dataCenterInfo'] {
  const name = asText(value.name) ?? 'MyOwn';
  const className = asText(value['@class']) ?? (name === 'Amazon' ? AMAZON_DATA_CENTER_CLASS : DEFAULT_DATA_CENTER_CLASS);
  return { className, name, metadata: readStringMap(value.metadata) };
}

/** Eureka's id rule: `instanceId` (its form checked by the schema), else an Amazon instance's `instance-id`, else the host name. */
function readInstanceId(instance: Json, hostName: string, dataCenter: EurekaAttributes['dataCenterInfo']): string {
  const explicit = asText(instance.instanceId);
  if (explicit !== undefined) return explicit;
  const amazonId = dataCenter.name === 'Amazon' ? dataCenter.metadata['instance-id'] : undefined;
  if (amazonId) return parseInstanceId('instance.dataCenterInfo.metadata.instance-id', amazonId);
  return parseInstanceId('instance.hostName', hostName);
}

/** Parses a register body of unknown shape (checked by its schema first); throws `REG_ERR_VALIDATION` naming the field. */
export function parseEurekaInstance(body: unknown, context: InstanceInputContext): ParsedInstance {
  return readEurekaInstance(parseBody(eurekaInstanceChecker, body), context);
}

/** Reads a register body that fits its schema (the route's validator or `parseEurekaInstance` checked it). */
export function readEurekaInstance(body: EurekaInstanceBody, context: InstanceInputContext): ParsedInstance {
  const instance = body.instance as Json;
  const app = String(body.instance.app).toUpperCase();
  const hostName = String(body.instance.hostName);
  const ipAddr = String(body.instance.ipAddr);
  const dataCenterInfo = readDataCenter(body.instance.dataCenterInfo as Json);
  const instanceId = readInstanceId(instance, hostName, dataCenterInfo);
  const host = isHost(hostName) ? hostName : isHost(ipAddr) ? ipAddr : undefined;
  if (host === undefined) throw invalid('instance.hostName', 'must be a host name or an IP address (or ipAddr must be one)');
  const port = readPort('instance.port', instance.port, DEFAULT_PORT, true);
  const securePort = readPort('instance.securePort', instance.securePort, DEFAULT_SECURE_PORT, false);
  const reportedStatus = readStatus(instance.status);
  const overriddenStatus = readOverride(instance.overriddenStatus ?? instance.overriddenstatus);
  const { leaseDurationMs, renewalIntervalSecs } = readLease(instance.leaseInfo, context.bounds);
  const metadata = checkMetadataLimits('instance.metadata', readStringMap(instance.metadata), context.limits);
  const zone = metadata.zone ?? dataCenterInfo.metadata['availability-zone'] ?? '';
  const lastDirty = asInteger(instance.lastDirtyTimestamp);
  const optional = (value: unknown) => asText(value) ?? null;
  const eureka = parseEurekaAttributes(
    {
      hostName,
      ipAddr,
      vipAddress: optional(instance.vipAddress),
      secureVipAddress: optional(instance.secureVipAddress),
      homePageUrl: optional(instance.homePageUrl),
      statusPageUrl: optional(instance.statusPageUrl),
      healthCheckUrl: optional(instance.healthCheckUrl),
      secureHealthCheckUrl: optional(instance.secureHealthCheckUrl),
      dataCenterInfo,
      countryId: asInteger(instance.countryId) ?? 1,
      portEnabled: port.enabled,
      securePort: securePort.port,
      overriddenStatus,
      reportedStatus,
      renewalIntervalSecs,
      // Filled in by planRegistration (the held one, or now) when the client sent none.
      lastDirtyTimestampMs: lastDirty !== undefined && lastDirty >= 0 ? lastDirty : 0,
    },
    'instance',
  );
  return {
    app,
    instanceId,
    data: {
      host,
      port: port.port,
      securePort: securePort.enabled ? securePort.port : null,
      status: reportedStatus,
      weight: 1,
      zone: zone.length <= ZONE_MAX_LENGTH ? zone : '',
      metadata,
      eureka,
    },
    leaseDurationMs,
    overriddenStatus,
    lastDirtyTimestampMs: lastDirty !== undefined && lastDirty >= 0 ? lastDirty : null,
  };
}
