import { isIP } from 'node:net';
import { invalid } from '../errors.js';
import { parseBody } from '../schema/body-schema.js';
import {
  INSTANCE_ID_MAX_LENGTH,
  INSTANCE_ID_PATTERN,
  instanceIdMessages,
  METADATA_KEY_PATTERN,
  NAME_MAX_LENGTH,
  NAME_PATTERN,
  nameMessages,
  registrationChecker,
  type RegistrationBody,
} from './registration-schema.js';
import { DEFAULT_GROUP, instanceStatuses, type InstanceData, type InstanceKey, type InstanceStatus } from './types.js';

/** Limits on what a client may store; see `limits` in the configuration reference. */
export interface InputLimits {
  metadataMaxKeys: number;
  metadataKeyMaxLength: number;
  metadataValueMaxLength: number;
}

/** Bounds on the lease a client may ask for. */
export interface LeaseBounds {
  leaseDurationMs: number;
  minLeaseDurationMs: number;
  maxLeaseDurationMs: number;
}

/** A register request after validation: every default filled in. */
export interface RegistrationInput extends InstanceKey {
  data: InstanceData;
  leaseDurationMs: number;
}

export { RegistrationBody } from './registration-schema.js';

export const DEFAULT_NAMESPACE = 'default';
const HOSTNAME_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
const NAME = new RegExp(NAME_PATTERN);
const INSTANCE_ID = new RegExp(INSTANCE_ID_PATTERN);
const METADATA_KEY = new RegExp(METADATA_KEY_PATTERN);

/**
 * A name or id from a path or query (the register body's are checked by its schema, with the
 * same rules and words: registration-schema.ts).
 */
function parseText(field: string, value: unknown, maxLength: number, pattern: RegExp, messages: typeof nameMessages): string {
  if (value === undefined || value === null || value === '') throw invalid(field, messages.required);
  if (typeof value !== 'string') throw invalid(field, messages.type);
  if (value.length > maxLength) throw invalid(field, messages.maxLength);
  if (!pattern.test(value)) throw invalid(field, messages.pattern);
  return value;
}

/** A service or namespace name: letters, digits, `.`, `_`, `:` and `-`, at most 128 characters. */
export function parseName(field: string, value: unknown): string {
  return parseText(field, value, NAME_MAX_LENGTH, NAME, nameMessages);
}

/** A group filter from a query string; absent means every group. */
export function parseGroupFilter(value: unknown): string | null {
  return value === undefined ? null : parseName('group', value);
}

/** The namespace from a query string or body; absent means `default`. */
export function parseNamespace(value: unknown): string {
  return value === undefined ? DEFAULT_NAMESPACE : parseName('namespace', value);
}

/** An instance id: at most 256 characters, none of them whitespace, a control character or `/ ? # % \\`, and not `.` or `..`. */
export function parseInstanceId(field: string, value: unknown): string {
  return parseText(field, value, INSTANCE_ID_MAX_LENGTH, INSTANCE_ID, instanceIdMessages);
}

/** True for a DNS host name (RFC 1123) or an IPv4 or IPv6 address. */
export function isHost(value: string): boolean {
  if (isIP(value) !== 0) return true;
  if (value.length > 253) return false;
  const name = value.endsWith('.') ? value.slice(0, -1) : value;
  if (name.length === 0) return false;
  const labels = name.split('.');
  // A name of digits and dots only must have been an IPv4 address; isIP said it is not.
  if (labels.every((label) => /^[0-9]+$/.test(label))) return false;
  return labels.every((label) => HOSTNAME_LABEL.test(label));
}

export function parsePort(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalid(field, 'must be an integer');
  if (value < 1 || value > 65535) throw invalid(field, 'must be between 1 and 65535');
  return value;
}

export function parseStatus(field: string, value: unknown): InstanceStatus {
  if (typeof value !== 'string' || !(instanceStatuses as readonly string[]).includes(value)) {
    throw invalid(field, `must be one of ${instanceStatuses.join(', ')}`);
  }
  return value as InstanceStatus;
}

/**
 * The configured limits on a metadata map whose shape is already checked (string keys, not
 * empty, to string values): key count, key and value lengths; and keys without a control
 * character (every write path comes through here: native, Eureka, Consul, peers).
 */
export function checkMetadataLimits(field: string, metadata: Record<string, string>, limits: InputLimits): Record<string, string> {
  const keys = Object.keys(metadata);
  if (keys.length > limits.metadataMaxKeys) throw invalid(field, `must have at most ${limits.metadataMaxKeys} keys`);
  for (const key of keys) {
    if (key.length > limits.metadataKeyMaxLength) {
      throw invalid(`${field}.${key.slice(0, 32)}`, `key must be at most ${limits.metadataKeyMaxLength} characters`);
    }
    if (!METADATA_KEY.test(key)) {
      throw invalid(field, `key ${JSON.stringify(key.slice(0, 32))} must not contain control characters (CR, LF, NUL...)`);
    }
    if ((metadata[key] as string).length > limits.metadataValueMaxLength) {
      throw invalid(`${field}.${key}`, `must be at most ${limits.metadataValueMaxLength} characters`);
    }
  }
  return metadata;
}

/** A flat map of string keys to string values, within the configured limits (a value of unknown shape). */
export function parseMetadata(field: string, value: unknown, limits: InputLimits): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(field, 'must be an object of string values');
  const entries = Object.entries(value as Record<string, unknown>);
  for (const [key, item] of entries) {
    if (key.length === 0) throw invalid(field, 'keys must not be empty');
    if (typeof item !== 'string') throw invalid(`${field}.${key}`, 'must be a string');
  }
  checkMetadataLimits(field, value as Record<string, string>, limits);
  // A plain object (a JSON body's) is kept as it came: it is a fresh object the request owns,
  // and the smallest form V8 has for it (a copy made by fromEntries spills its fifth key out of
  // the object: about 3 MB more per 100,000 instances). Anything else is copied into a plain
  // object; fromEntries defines own properties, so even a "__proto__" key stays plain data.
  if (Object.getPrototypeOf(value) === Object.prototype) return value as Record<string, string>;
  return Object.fromEntries(entries) as Record<string, string>;
}

/** The lease a register asks for (its shape checked by the schema): within the cluster's bounds, or the default. */
function leaseWithinBounds(value: number | null | undefined, bounds: LeaseBounds): number {
  if (value === undefined || value === null) return bounds.leaseDurationMs;
  if (value < bounds.minLeaseDurationMs || value > bounds.maxLeaseDurationMs) {
    throw invalid('leaseDurationMs', `must be between ${bounds.minLeaseDurationMs} and ${bounds.maxLeaseDurationMs}`);
  }
  return value;
}

/**
 * Validates a register body (`POST /v1/instances`, and the native form the Consul adapter
 * builds): its shape by its schema (registration-schema.ts), then `registrationOf`.
 * `namespace` is the request's, settled by the caller (the body may repeat the query's
 * `?namespace=` but not contradict it).
 */
export function parseRegistration(body: unknown, namespace: string, limits: InputLimits, bounds: LeaseBounds): RegistrationInput {
  return registrationOf(parseBody(registrationChecker, body), namespace, limits, bounds);
}

/**
 * A register body that fits its schema (the route's validator or `parseRegistration` checked
 * it) as the registry's input: defaults filled in, and the rules no schema holds (a host name
 * or IP address, the configured metadata limits and lease bounds) applied.
 */
export function registrationOf(body: RegistrationBody, namespace: string, limits: InputLimits, bounds: LeaseBounds): RegistrationInput {
  const { host, port } = body;
  if (!isHost(host)) throw invalid('host', 'must be a host name or an IP address');
  const group = body.group ?? DEFAULT_GROUP;
  const data: InstanceData = {
    host,
    port,
    securePort: body.securePort ?? null,
    status: body.status ?? 'UP',
    weight: body.weight ?? 1,
    zone: body.zone ?? '',
    // Kept as it came (see parseMetadata): a fresh plain object the request owns.
    metadata: body.metadata ? checkMetadataLimits('metadata', body.metadata, limits) : {},
  };
  // Only another group is stored (set here rather than spread in: this runs for every register).
  if (group !== DEFAULT_GROUP) data.group = group;
  const instanceId = body.instanceId ?? `${host}:${port}`;
  return { namespace, service: body.service, instanceId, data, leaseDurationMs: leaseWithinBounds(body.leaseDurationMs, bounds) };
}

const DURATION = /^(\d{1,9})(ms|s|m)?$/;

/** A duration as `500ms`, `30s`, `5m` or plain seconds (`30`), in milliseconds. */
export function parseDuration(field: string, value: unknown): number {
  const match = typeof value === 'string' ? DURATION.exec(value) : null;
  if (!match) throw invalid(field, 'must be a duration such as 500ms, 30s or 5m');
  const amount = Number(match[1]);
  const unit = match[2] ?? 's';
  return unit === 'ms' ? amount : unit === 's' ? amount * 1_000 : amount * 60_000;
}

/** A non-negative integer from a query string (an index, a count). */
export function parseCount(field: string, value: unknown): number {
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) throw invalid(field, 'must be a non-negative integer');
  return Number(value);
}
