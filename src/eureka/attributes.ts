import { invalid } from '../errors.js';
import type { ProtocolExtension } from '../registry/extensions.js';
import { instanceStatuses, type InstanceData, type InstanceStatus } from '../registry/types.js';

/**
 * What a Eureka client tells about an instance beyond our core fields (host, port, status,
 * metadata...). It travels as the record's `eureka` protocol extension (registry/extensions.ts),
 * so it replicates with the instance and every peer answers the same Eureka payload; the core
 * never reads inside it. Plain JSON: strings, numbers, booleans, null.
 */
export interface EurekaAttributes {
  /** The client's `hostName`, as sent (the core `host` is this or `ipAddr`, whichever is a valid host). */
  hostName: string;
  ipAddr: string;
  /** Comma-separated VIP addresses, or null when the client sent none. */
  vipAddress: string | null;
  secureVipAddress: string | null;
  homePageUrl: string | null;
  statusPageUrl: string | null;
  healthCheckUrl: string | null;
  secureHealthCheckUrl: string | null;
  dataCenterInfo: EurekaDataCenterInfo;
  countryId: number;
  /** `port.@enabled`; the core `port` holds the number either way. */
  portEnabled: boolean;
  /** `securePort.$` as sent, even when disabled (the core `securePort` is null then). */
  securePort: number;
  /** The operator's status override (Eureka's `overriddenStatus`); null for none (`UNKNOWN`). */
  overriddenStatus: InstanceStatus | null;
  /** The status the client itself last reported; the override rules start from it. */
  reportedStatus: InstanceStatus;
  /** `leaseInfo.renewalIntervalInSecs`: how often the client says it heartbeats. */
  renewalIntervalSecs: number;
  /** The client's `lastDirtyTimestamp` (epoch ms of its last local change). */
  lastDirtyTimestampMs: number;
}

export interface EurekaDataCenterInfo {
  /** The Java class name Eureka clients put in `@class`. */
  className: string;
  /** `MyOwn`, `Amazon` or `Netflix`. */
  name: string;
  /** Amazon's metadata (instance-id, availability-zone...); empty elsewhere. */
  metadata: Record<string, string>;
}

/** Size limits of the Eureka attributes (kept small: they are replicated with every write). */
export const eurekaLimits = {
  shortTextMaxLength: 255,
  urlMaxLength: 2_048,
  vipMaxLength: 1_024,
  dataCenterMetadataMaxKeys: 64,
  dataCenterMetadataKeyMaxLength: 128,
  dataCenterMetadataValueMaxLength: 512,
  renewalIntervalMaxSecs: 86_400,
  countryIdMax: 1_000_000,
  timestampMaxMs: 8_640_000_000_000_000,
} as const;

const ATTRIBUTE_FIELDS = [
  'hostName',
  'ipAddr',
  'vipAddress',
  'secureVipAddress',
  'homePageUrl',
  'statusPageUrl',
  'healthCheckUrl',
  'secureHealthCheckUrl',
  'dataCenterInfo',
  'countryId',
  'portEnabled',
  'securePort',
  'overriddenStatus',
  'reportedStatus',
  'renewalIntervalSecs',
  'lastDirtyTimestampMs',
] as const satisfies readonly (keyof EurekaAttributes)[];

// Control characters never belong in these fields; they would also break the XML answers.
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

function text(field: string, value: unknown, maxLength: number): string {
  if (typeof value !== 'string') throw invalid(field, 'must be a string');
  if (value.length > maxLength) throw invalid(field, `must be at most ${maxLength} characters`);
  if (CONTROL_CHARACTERS.test(value)) throw invalid(field, 'must not contain control characters');
  return value;
}

function optionalText(field: string, value: unknown, maxLength: number): string | null {
  return value === null ? null : text(field, value, maxLength);
}

function integer(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(field, `must be an integer from ${min} to ${max}`);
  }
  return value;
}

function boolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalid(field, 'must be a boolean');
  return value;
}

function status(field: string, value: unknown): InstanceStatus {
  if (typeof value !== 'string' || !(instanceStatuses as readonly string[]).includes(value)) {
    throw invalid(field, `must be one of ${instanceStatuses.join(', ')}`);
  }
  return value as InstanceStatus;
}

function dataCenterInfo(field: string, value: unknown): EurekaDataCenterInfo {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(field, 'must be an object');
  const input = value as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (key !== 'className' && key !== 'name' && key !== 'metadata') throw invalid(`${field}.${key}`, 'is not a known field');
  }
  const metadata = input.metadata;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw invalid(`${field}.metadata`, 'must be an object of string values');
  }
  const entries = Object.entries(metadata as Record<string, unknown>);
  if (entries.length > eurekaLimits.dataCenterMetadataMaxKeys) {
    throw invalid(`${field}.metadata`, `must have at most ${eurekaLimits.dataCenterMetadataMaxKeys} keys`);
  }
  for (const [key, item] of entries) {
    text(`${field}.metadata key`, key, eurekaLimits.dataCenterMetadataKeyMaxLength);
    text(`${field}.metadata.${key}`, item, eurekaLimits.dataCenterMetadataValueMaxLength);
  }
  return {
    className: text(`${field}.className`, input.className, eurekaLimits.shortTextMaxLength),
    name: text(`${field}.name`, input.name, eurekaLimits.shortTextMaxLength),
    metadata: Object.fromEntries(entries) as Record<string, string>,
  };
}

/**
 * Checks a value claimed to be Eureka attributes (built by the Eureka API, or received from
 * another peer) against the type and the size limits; returns a fresh copy or throws a
 * `REG_ERR_VALIDATION` naming the field.
 */
export function parseEurekaAttributes(value: unknown, field = 'eureka'): EurekaAttributes {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(field, 'must be an object');
  const input = value as Record<string, unknown>;
  const known = new Set<string>(ATTRIBUTE_FIELDS);
  for (const key of Object.keys(input)) {
    if (!known.has(key)) throw invalid(`${field}.${key}`, 'is not a known field');
  }
  const { shortTextMaxLength, urlMaxLength, vipMaxLength } = eurekaLimits;
  return {
    hostName: text(`${field}.hostName`, input.hostName, shortTextMaxLength),
    ipAddr: text(`${field}.ipAddr`, input.ipAddr, shortTextMaxLength),
    vipAddress: optionalText(`${field}.vipAddress`, input.vipAddress, vipMaxLength),
    secureVipAddress: optionalText(`${field}.secureVipAddress`, input.secureVipAddress, vipMaxLength),
    homePageUrl: optionalText(`${field}.homePageUrl`, input.homePageUrl, urlMaxLength),
    statusPageUrl: optionalText(`${field}.statusPageUrl`, input.statusPageUrl, urlMaxLength),
    healthCheckUrl: optionalText(`${field}.healthCheckUrl`, input.healthCheckUrl, urlMaxLength),
    secureHealthCheckUrl: optionalText(`${field}.secureHealthCheckUrl`, input.secureHealthCheckUrl, urlMaxLength),
    dataCenterInfo: dataCenterInfo(`${field}.dataCenterInfo`, input.dataCenterInfo),
    countryId: integer(`${field}.countryId`, input.countryId, 0, eurekaLimits.countryIdMax),
    portEnabled: boolean(`${field}.portEnabled`, input.portEnabled),
    securePort: integer(`${field}.securePort`, input.securePort, 1, 65_535),
    overriddenStatus: input.overriddenStatus === null ? null : status(`${field}.overriddenStatus`, input.overriddenStatus),
    reportedStatus: status(`${field}.reportedStatus`, input.reportedStatus),
    renewalIntervalSecs: integer(`${field}.renewalIntervalSecs`, input.renewalIntervalSecs, 1, eurekaLimits.renewalIntervalMaxSecs),
    lastDirtyTimestampMs: integer(`${field}.lastDirtyTimestampMs`, input.lastDirtyTimestampMs, 0, eurekaLimits.timestampMaxMs),
  };
}

function sameStringMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key]);
}

/** Field-by-field equality (key order does not matter), so an unchanged re-registration writes nothing. */
export function sameEurekaAttributes(a: EurekaAttributes | undefined, b: EurekaAttributes | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  for (const field of ATTRIBUTE_FIELDS) {
    if (field === 'dataCenterInfo') continue;
    if (a[field] !== b[field]) return false;
  }
  return (
    a.dataCenterInfo.className === b.dataCenterInfo.className &&
    a.dataCenterInfo.name === b.dataCenterInfo.name &&
    sameStringMap(a.dataCenterInfo.metadata, b.dataCenterInfo.metadata)
  );
}

/** The name of the Eureka adapter's protocol extension on a record. */
export const EUREKA_EXTENSION = 'eureka';

/** Extensions already checked, so that a read validates each one once (they are immutable). */
const checked = new WeakMap<object, EurekaAttributes | null>();

/**
 * The Eureka attributes of an instance's data, or undefined for an instance registered through
 * another protocol. The core carries the extension opaquely (it may come from another peer or
 * the disk), so it is checked here, once per extension object; one that does not parse is
 * treated as absent (the instance is then shown with defaults, never half-formed).
 */
export function eurekaOf(data: InstanceData): EurekaAttributes | undefined {
  const extension = data.extensions?.[EUREKA_EXTENSION];
  if (extension === undefined) return undefined;
  let attributes = checked.get(extension);
  if (attributes === undefined) {
    try {
      attributes = parseEurekaAttributes(extension, 'eureka');
    } catch {
      attributes = null;
    }
    checked.set(extension, attributes);
  }
  return attributes ?? undefined;
}

/**
 * Data with these Eureka attributes as its `eureka` extension, and the client's declared
 * renewal interval as the core's `renewalIntervalMs` (self-preservation counts on it).
 */
export function withEureka<T extends InstanceData>(data: T, eureka: EurekaAttributes): T {
  checked.set(eureka, eureka);
  return {
    ...data,
    renewalIntervalMs: eureka.renewalIntervalSecs * 1_000,
    extensions: { ...data.extensions, [EUREKA_EXTENSION]: eureka as unknown as ProtocolExtension },
  };
}

/**
 * The Eureka adapter's view of an instance's data: the core data with its Eureka attributes
 * beside it (absent for an instance registered through another protocol). The status rules
 * (status-rules.ts) work on this shape; `toCoreData` turns it back into what the core stores.
 */
export type EurekaView = InstanceData & { eureka?: EurekaAttributes };

/** The Eureka view of stored data. */
export function eurekaView(data: InstanceData): EurekaView {
  const eureka = eurekaOf(data);
  return eureka === undefined ? data : { ...data, eureka };
}

/** The core data of a Eureka view: its attributes become the `eureka` extension (withEureka). */
export function toCoreData(view: EurekaView): InstanceData {
  const { eureka, ...data } = view;
  return eureka === undefined ? data : withEureka(data, eureka);
}

/** The core patch of a status change: the status, and the Eureka extension when the change carries one. */
export function toCorePatch(current: InstanceData, patch: { status: InstanceStatus; eureka?: EurekaAttributes }): Partial<InstanceData> {
  if (patch.eureka === undefined) return { status: patch.status };
  const { renewalIntervalMs, extensions } = withEureka(current, patch.eureka);
  return { status: patch.status, renewalIntervalMs, extensions };
}
