import { isIP } from 'node:net';
import type { ProtocolExtension } from '../registry/extensions.js';
import type { InputLimits, LeaseBounds, RegistrationInput } from '../registry/validate.js';
import { parseInstanceId, parseRegistration } from '../registry/validate.js';
import { goDurationMs } from './duration.js';
import { badRequest } from './errors.js';
import {
  boundedText,
  CHECK_STATUSES,
  CHECKS_MAX,
  consulExtension,
  CONSUL_EXTENSION,
  TAG_MAX_LENGTH,
  TAGS_MAX,
  type CheckStatus,
  type StoredCheck,
} from './fields.js';
import { leaseForChecks } from './lease.js';

type Json = Record<string, unknown>;

/**
 * A field of a JSON object, found the way Go's encoding/json finds it: by name, ignoring case
 * (python-consul sends `name`, `check`, `ttl`; the npm client `Name`, `Check`, `TTL`), and
 * also in Consul's snake_case form (`deregister_critical_service_after`), which its agent
 * endpoint translates too.
 */
export function field(object: Json, name: string): unknown {
  if (Object.hasOwn(object, name)) return object[name];
  const wanted = name.toLowerCase();
  for (const key of Object.keys(object)) if (key.toLowerCase().replaceAll('_', '') === wanted) return object[key];
  return undefined;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw badRequest(`${name}: must be a string`);
  return value;
}

/** A Go duration field (`"10s"`), in ms; undefined when absent. */
function durationField(name: string, value: unknown): number | undefined {
  const text = optionalString(name, value);
  if (text === undefined) return undefined;
  const ms = goDurationMs(text);
  if (ms === undefined) throw badRequest(`${name}: must be a duration such as "10s", "1m" or "1h30m"`);
  return ms;
}

/** Check types a Consul agent runs itself; this registry has no agent next to the service to run them. */
const ACTIVE_CHECK_FIELDS = ['HTTP', 'TCP', 'UDP', 'GRPC', 'H2PING', 'Args', 'Script', 'DockerContainerID', 'Shell', 'AliasService', 'AliasNode', 'OSService'];

export interface CheckContext {
  serviceName: string;
  limits: LeaseLimits;
  /** The checks of the instance before this register: a check registered again without a Status keeps its state. */
  previousChecks: readonly StoredCheck[];
}

type LeaseLimits = Pick<LeaseBounds, 'minLeaseDurationMs' | 'maxLeaseDurationMs'>;

/**
 * One `Check` of a register body. Only TTL checks: the client renews them (our heartbeat);
 * HTTP, TCP, gRPC and script checks would need an agent beside the service, which a registry
 * peer is not, so they are refused with a message that says to use a TTL check.
 */
export function parseCheck(value: unknown, where: string, defaultId: string, context: CheckContext): StoredCheck {
  if (!isObject(value)) throw badRequest(`${where}: must be an object with a TTL`);
  for (const name of ACTIVE_CHECK_FIELDS) {
    const given = field(value, name);
    if (given !== undefined && given !== null && given !== '' && !(Array.isArray(given) && given.length === 0)) {
      throw badRequest(`${where}.${name}: this registry runs no checks itself; register a TTL check and renew it with PUT /v1/agent/check/pass/:check_id`);
    }
  }
  const ttlMs = durationField(`${where}.TTL`, field(value, 'TTL'));
  if (ttlMs === undefined) throw badRequest(`${where}.TTL: is required (only TTL checks are supported)`);
  if (ttlMs < 1_000 || ttlMs > context.limits.maxLeaseDurationMs) {
    throw badRequest(`${where}.TTL: must be between 1s and ${context.limits.maxLeaseDurationMs / 1_000}s (cluster.maxLeaseDurationMs)`);
  }
  const id = optionalString(`${where}.CheckID`, field(value, 'CheckID') ?? field(value, 'ID')) ?? defaultId;
  parseInstanceIdAs(`${where}.CheckID`, id);
  const givenStatus = optionalString(`${where}.Status`, field(value, 'Status'));
  const previous = context.previousChecks.find((check) => check.id === id);
  // A TTL check starts critical unless the register says otherwise, as in Consul; registered
  // again, it keeps the state it had (a client that registers on every start does not flap).
  const status = givenStatus ?? previous?.status ?? 'critical';
  if (!CHECK_STATUSES.includes(status as CheckStatus)) throw badRequest(`${where}.Status: must be passing, warning or critical`);
  const deregisterAfterMs = durationField(`${where}.DeregisterCriticalServiceAfter`, field(value, 'DeregisterCriticalServiceAfter')) ?? null;
  return {
    id,
    name: boundedText(optionalString(`${where}.Name`, field(value, 'Name')) ?? `Service '${context.serviceName}' check`),
    ttlMs,
    status: status as CheckStatus,
    output: givenStatus === undefined ? (previous?.output ?? '') : '',
    notes: boundedText(optionalString(`${where}.Notes`, field(value, 'Notes')) ?? ''),
    deregisterAfterMs,
  };
}

/** A check id is a URL path segment (`/v1/agent/check/pass/:check_id`): the instance id rules apply. */
function parseInstanceIdAs(name: string, value: string): void {
  try {
    parseInstanceId(name, value);
  } catch (error) {
    throw badRequest((error as Error).message);
  }
}

function parseTags(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((tag) => typeof tag === 'string')) throw badRequest('Tags: must be an array of strings');
  if (value.length > TAGS_MAX) throw badRequest(`Tags: at most ${TAGS_MAX} tags`);
  if (value.some((tag: string) => tag.length > TAG_MAX_LENGTH)) throw badRequest(`Tags: each tag at most ${TAG_MAX_LENGTH} characters`);
  return [...new Set(value as string[])];
}

function parseWeights(value: unknown): { passing: number; warning: number | undefined } {
  if (value === undefined || value === null) return { passing: 1, warning: undefined };
  if (!isObject(value)) throw badRequest('Weights: must be an object {"Passing": n, "Warning": n}');
  const read = (name: string): number | undefined => {
    const weight = field(value, name);
    if (weight === undefined || weight === null) return undefined;
    if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 0 || weight > 1_000_000) {
      throw badRequest(`Weights.${name}: must be an integer between 0 and 1000000`);
    }
    return weight;
  };
  return { passing: read('Passing') ?? 1, warning: read('Warning') };
}

export interface RegisterContext {
  namespace: string;
  /** Where the request came from: the service's address when the body gives none (Consul uses its node's). */
  clientAddress: string;
  /** The zone of the peer that takes the register: a Consul service belongs to its agent's datacenter (our region). */
  zone: string;
  /** The checks of the instance this register replaces, if any. */
  previousChecks: readonly StoredCheck[];
  limits: InputLimits;
  bounds: LeaseBounds;
}

export interface ConsulRegistration {
  input: RegistrationInput;
  checks: StoredCheck[];
}

/**
 * Reads `PUT /v1/agent/service/register`'s body into a register of the native API, validated
 * by the same rules (validate.ts `parseRegistration`): Name is the service, ID the instance id
 * (Consul's default: the name), Address the host (default: the client's address), Port, Meta
 * the metadata, Weights.Passing the weight; Tags, the TTL checks and Weights.Warning go to the
 * reserved metadata keys (fields.ts). The status is DOWN while a check is critical.
 */
export function parseConsulRegistration(body: unknown, context: RegisterContext): ConsulRegistration {
  if (!isObject(body)) throw badRequest('Request decode failed: the body must be a JSON object (the service definition)');
  const name = optionalString('Name', field(body, 'Name'));
  if (name === undefined) throw badRequest('Name: missing service name');
  const kind = optionalString('Kind', field(body, 'Kind'));
  if (kind !== undefined && kind !== 'typical') throw badRequest(`Kind: "${kind.slice(0, 64)}" services (Connect proxies, gateways) are not supported`);
  const connect = field(body, 'Connect');
  if (connect !== undefined && connect !== null) throw badRequest('Connect: Consul Connect is not supported by this registry');
  const id = optionalString('ID', field(body, 'ID')) ?? name;
  parseInstanceIdAs('ID', id);
  const address = optionalString('Address', field(body, 'Address')) ?? context.clientAddress;
  // An IPv6 client address may come as ::ffff:1.2.3.4; keep the IPv4 form then.
  const host = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  const port = field(body, 'Port');
  if (port === undefined || port === null || port === 0) throw badRequest('Port: required by this registry (1 to 65535)');
  const meta = field(body, 'Meta') ?? {};
  const tags = parseTags(field(body, 'Tags'));
  const weights = parseWeights(field(body, 'Weights'));
  const checkContext: CheckContext = { serviceName: name, limits: context.bounds, previousChecks: context.previousChecks };
  const single = field(body, 'Check');
  const many = field(body, 'Checks');
  if (many !== undefined && many !== null && !Array.isArray(many)) throw badRequest('Checks: must be an array of checks');
  const given = [...(single === undefined || single === null ? [] : [single]), ...((many as unknown[] | null | undefined) ?? [])];
  if (given.length > CHECKS_MAX) throw badRequest(`Checks: at most ${CHECKS_MAX} checks`);
  const checks = given.map((check, i) =>
    parseCheck(check, single !== undefined && single !== null && i === 0 ? 'Check' : `Checks[${i}]`, given.length === 1 ? `service:${id}` : `service:${id}:${i + 1}`, checkContext),
  );
  if (new Set(checks.map((check) => check.id)).size !== checks.length) throw badRequest('Checks: two checks have the same CheckID');
  // The native rules check the rest (name, id, host, port, Meta's size); their message names our field.
  const native = {
    service: name,
    instanceId: id,
    host,
    port,
    weight: weights.passing,
    zone: context.zone,
    metadata: meta,
    leaseDurationMs: leaseForChecks(checks, context.bounds),
  };
  let input: RegistrationInput;
  try {
    input = parseRegistration(native, context.namespace, context.limits, context.bounds);
  } catch (error) {
    throw badRequest(consulFieldNames((error as Error).message));
  }
  const extension = consulExtension(input.instanceId, input.data.metadata, tags, checks, weights.warning);
  input.data.extensions = { ...input.data.extensions, [CONSUL_EXTENSION]: extension as unknown as ProtocolExtension };
  if (checks.some((check) => check.status === 'critical')) input.data.status = 'DOWN';
  return { input, checks };
}

const NATIVE_TO_CONSUL: Record<string, string> = { service: 'Name', instanceId: 'ID', host: 'Address', port: 'Port', weight: 'Weights.Passing', metadata: 'Meta' };

/** A native validation message with our field names turned into Consul's. */
function consulFieldNames(message: string): string {
  const colon = message.indexOf(':');
  const fieldPath = colon < 0 ? '' : message.slice(0, colon);
  const head = fieldPath.split('.')[0] ?? '';
  const mapped = NATIVE_TO_CONSUL[head];
  return mapped === undefined ? message : `${mapped}${fieldPath.slice(head.length)}${message.slice(colon)}`;
}
