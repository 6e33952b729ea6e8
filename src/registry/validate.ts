import { isIP } from 'node:net';
import { invalid } from '../errors.js';
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

export const DEFAULT_NAMESPACE = 'default';
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const NAME_MAX_LENGTH = 128;
const INSTANCE_ID_MAX_LENGTH = 256;
const ZONE_MAX_LENGTH = 64;
const MAX_WEIGHT = 1_000_000;
const HOSTNAME_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
// Control characters, '/', '?', '#' and whitespace cannot appear in an instance id: it is a URL path segment.
const INSTANCE_ID_FORBIDDEN = /[\u0000-\u0020\u007f/?#%\\]/;

const REGISTER_FIELDS = new Set([
  'namespace',
  'service',
  'instanceId',
  'host',
  'port',
  'securePort',
  'status',
  'weight',
  'zone',
  'metadata',
  'leaseDurationMs',
  'group',
]);

/** A service or namespace name: letters, digits, `.`, `_`, `:` and `-`, at most 128 characters. */
export function parseName(field: string, value: unknown): string {
  if (value === undefined || value === null || value === '') throw invalid(field, 'is required');
  if (typeof value !== 'string') throw invalid(field, 'must be a string');
  if (value.length > NAME_MAX_LENGTH) throw invalid(field, `must be at most ${NAME_MAX_LENGTH} characters`);
  if (!NAME_PATTERN.test(value)) {
    throw invalid(field, 'must start with a letter or digit and hold only letters, digits, ".", "_", ":" and "-"');
  }
  return value;
}

/** A group filter from a query string; absent means every group. */
export function parseGroupFilter(value: unknown): string | null {
  return value === undefined ? null : parseName('group', value);
}

/** The namespace from a query string or body; absent means `default`. */
export function parseNamespace(value: unknown): string {
  return value === undefined ? DEFAULT_NAMESPACE : parseName('namespace', value);
}

export function parseInstanceId(field: string, value: unknown): string {
  if (value === undefined || value === null || value === '') throw invalid(field, 'is required');
  if (typeof value !== 'string') throw invalid(field, 'must be a string');
  if (value.length > INSTANCE_ID_MAX_LENGTH) throw invalid(field, `must be at most ${INSTANCE_ID_MAX_LENGTH} characters`);
  if (INSTANCE_ID_FORBIDDEN.test(value)) {
    throw invalid(field, 'must not contain spaces, control characters or any of / ? # % \\');
  }
  return value;
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

/** A flat map of string keys to string values, within the configured limits. */
export function parseMetadata(field: string, value: unknown, limits: InputLimits): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(field, 'must be an object of string values');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > limits.metadataMaxKeys) throw invalid(field, `must have at most ${limits.metadataMaxKeys} keys`);
  for (const [key, item] of entries) {
    if (key.length === 0) throw invalid(field, 'keys must not be empty');
    if (key.length > limits.metadataKeyMaxLength) {
      throw invalid(`${field}.${key.slice(0, 32)}`, `key must be at most ${limits.metadataKeyMaxLength} characters`);
    }
    if (typeof item !== 'string') throw invalid(`${field}.${key}`, 'must be a string');
    if (item.length > limits.metadataValueMaxLength) {
      throw invalid(`${field}.${key}`, `must be at most ${limits.metadataValueMaxLength} characters`);
    }
  }
  // A plain object (a JSON body's) is kept as it came: it is a fresh object the request owns,
  // and the smallest form V8 has for it (a copy made by fromEntries spills its fifth key out of
  // the object: about 3 MB more per 100,000 instances). Anything else is copied into a plain
  // object; fromEntries defines own properties, so even a "__proto__" key stays plain data.
  if (Object.getPrototypeOf(value) === Object.prototype) return value as Record<string, string>;
  return Object.fromEntries(entries) as Record<string, string>;
}

export function parseLeaseDuration(field: string, value: unknown, bounds: LeaseBounds): number {
  if (value === undefined || value === null) return bounds.leaseDurationMs;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalid(field, 'must be an integer (milliseconds)');
  if (value < bounds.minLeaseDurationMs || value > bounds.maxLeaseDurationMs) {
    throw invalid(field, `must be between ${bounds.minLeaseDurationMs} and ${bounds.maxLeaseDurationMs}`);
  }
  return value;
}

function parseWeight(value: unknown): number {
  if (value === undefined || value === null) return 1;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid('weight', 'must be a number');
  if (value < 0 || value > MAX_WEIGHT) throw invalid('weight', `must be between 0 and ${MAX_WEIGHT}`);
  return value;
}

function parseZone(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw invalid('zone', 'must be a string');
  if (value.length > ZONE_MAX_LENGTH) throw invalid('zone', `must be at most ${ZONE_MAX_LENGTH} characters`);
  return value;
}

/**
 * Validates a register body (`POST /v1/instances`). `queryNamespace` is the `?namespace=` of
 * the request, if any; the body may repeat it but not contradict it (checked by the caller).
 */
export function parseRegistration(
  body: unknown,
  namespace: string,
  limits: InputLimits,
  bounds: LeaseBounds,
): RegistrationInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid('body', 'must be a JSON object');
  }
  const input = body as Record<string, unknown>;
  for (const field of Object.keys(input)) {
    if (!REGISTER_FIELDS.has(field)) throw invalid(field, 'is not a known field');
  }
  const service = parseName('service', input.service);
  if (input.host === undefined || input.host === '') throw invalid('host', 'is required');
  if (typeof input.host !== 'string' || !isHost(input.host)) throw invalid('host', 'must be a host name or an IP address');
  const host = input.host;
  if (input.port === undefined) throw invalid('port', 'is required');
  const port = parsePort('port', input.port);
  const securePort = input.securePort === undefined || input.securePort === null ? null : parsePort('securePort', input.securePort);
  const instanceId = input.instanceId === undefined ? `${host}:${port}` : parseInstanceId('instanceId', input.instanceId);
  const group = input.group === undefined || input.group === null ? DEFAULT_GROUP : parseName('group', input.group);
  const data: InstanceData = {
    host,
    port,
    securePort,
    status: input.status === undefined ? 'UP' : parseStatus('status', input.status),
    weight: parseWeight(input.weight),
    zone: parseZone(input.zone),
    metadata: parseMetadata('metadata', input.metadata, limits),
  };
  // Only another group is stored (set here rather than spread in: this runs for every register).
  if (group !== DEFAULT_GROUP) data.group = group;
  return { namespace, service, instanceId, data, leaseDurationMs: parseLeaseDuration('leaseDurationMs', input.leaseDurationMs, bounds) };
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
