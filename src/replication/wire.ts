/** Records and fields as peers send them: checked on the way in, converted on the way out (the message types are in transport/peer-calls.ts). */
import { isVersion } from '../clock/hlc.js';
import { RegistryError } from '../errors.js';
import { legacyRenewalIntervalMs, liftExtensions, lowerExtensions } from '../registry/extensions.js';
import { KEY_SEPARATOR, type InstanceKey, type InstanceRecord, type StoredInstance } from '../registry/types.js';
import { leaseRemainingMs, type LeaseView } from '../registry/visibility.js';
import {
  isHost,
  parseInstanceId,
  parseMetadata,
  parseName,
  parsePort,
  parseStatus,
} from '../registry/validate.js';
import { isObject, parsePeerId } from '../membership/messages.js';
import type { WireRecord } from '../transport/peer-calls.js';
import { EncodedRequest } from '../transport/transport.js';

/** Generous bounds for what other peers send: their own limits may differ from ours. */
const WIRE_LIMITS = { metadataMaxKeys: 1_000, metadataKeyMaxLength: 1_024, metadataValueMaxLength: 65_536 };
const MAX_LEASE_MS = 30 * 24 * 3_600_000;

function bad(message: string): RegistryError {
  return new RegistryError('REG_ERR_VALIDATION', message);
}

function isCount(value: unknown, max = Number.MAX_SAFE_INTEGER): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}

/**
 * Checks a record another peer sent, field by field, and copies only the known fields. A peer
 * never applies what it cannot fully understand; the caller counts such records as invalid.
 */
export function parseWireRecord(value: unknown): WireRecord {
  if (!isObject(value)) throw bad('record: must be an object');
  const data = value.data;
  if (!isObject(data)) throw bad('record.data: must be an object');
  if (typeof data.host !== 'string' || !isHost(data.host)) throw bad('record.data.host: must be a host');
  if (!isVersion(value.version)) throw bad('record.version: must be a version');
  if (value.deleted !== null && value.deleted !== 'cancel' && value.deleted !== 'evict') {
    throw bad('record.deleted: must be null, "cancel" or "evict"');
  }
  if (!isCount(value.leaseDurationMs, MAX_LEASE_MS)) throw bad('record.leaseDurationMs: must be a duration');
  if (!isCount(value.leaseRemainingMs, MAX_LEASE_MS)) throw bad('record.leaseRemainingMs: must be a duration');
  if (!isCount(value.registeredAtMs)) throw bad('record.registeredAtMs: must be a time');
  if (typeof data.weight !== 'number' || !Number.isFinite(data.weight) || data.weight < 0) {
    throw bad('record.data.weight: must be a number');
  }
  if (typeof data.zone !== 'string' || data.zone.length > 64) throw bad('record.data.zone: must be a string');
  // The fields every record has in one literal, the optional ones assigned after: a literal
  // ending in spreads makes a larger object (96 bytes rather than 80), and this one is stored
  // as it is for every replicated instance.
  const parsedData: InstanceRecord['data'] = {
    host: data.host,
    port: parsePort('record.data.port', data.port),
    securePort: data.securePort === null ? null : parsePort('record.data.securePort', data.securePort),
    status: parseStatus('record.data.status', data.status),
    weight: data.weight,
    zone: data.zone,
    metadata: parseMetadata('record.data.metadata', data.metadata, WIRE_LIMITS),
  };
  if (data.group !== undefined) parsedData.group = parseName('record.data.group', data.group);
  const { extensions, renewalIntervalMs } = extensionsOf(data);
  if (renewalIntervalMs !== undefined) parsedData.renewalIntervalMs = renewalIntervalMs;
  if (extensions !== undefined) parsedData.extensions = extensions;
  return {
    namespace: parseName('record.namespace', value.namespace),
    service: parseName('record.service', value.service),
    instanceId: parseInstanceId('record.instanceId', value.instanceId),
    data: parsedData,
    version: value.version,
    owner: parsePeerId('record.owner', value.owner),
    deleted: value.deleted,
    leaseDurationMs: value.leaseDurationMs,
    registeredAtMs: value.registeredAtMs,
    leaseRemainingMs: value.leaseRemainingMs,
  };
}

/**
 * The protocol extensions of a wire record's data (each one a field of `data`, see
 * extensions.ts) and its declared renewal interval (from a peer of the previous version: the
 * one its extension held).
 */
function extensionsOf(data: Record<string, unknown>): Pick<InstanceRecord['data'], 'extensions' | 'renewalIntervalMs'> {
  const extensions = liftExtensions('record.data', data);
  const renewalIntervalMs =
    data.renewalIntervalMs === undefined ? legacyRenewalIntervalMs(extensions) : requireCount('record.data.renewalIntervalMs', data.renewalIntervalMs, MAX_LEASE_MS);
  return { ...(extensions === undefined ? {} : { extensions }), ...(renewalIntervalMs === undefined ? {} : { renewalIntervalMs }) };
}

/** Splits `namespace/service/instanceId` (the instance id may itself hold no separator). */
export function parseKeyString(key: string): InstanceKey | undefined {
  const first = key.indexOf(KEY_SEPARATOR);
  const second = first < 0 ? -1 : key.indexOf(KEY_SEPARATOR, first + 1);
  if (first <= 0 || second <= first + 1 || second === key.length - 1) return undefined;
  return { namespace: key.slice(0, first), service: key.slice(first + 1, second), instanceId: key.slice(second + 1) };
}

/** Reads an object body or refuses it. */
export function requireObject(body: unknown): Record<string, unknown> {
  if (!isObject(body)) throw bad('body: must be a JSON object');
  return body;
}

export function requireArray(field: string, value: unknown, maxLength: number): unknown[] {
  if (!Array.isArray(value)) throw bad(`${field}: must be an array`);
  if (value.length > maxLength) throw bad(`${field}: must have at most ${maxLength} items`);
  return value;
}

export function requireCount(field: string, value: unknown, max: number): number {
  if (!isCount(value, max)) throw bad(`${field}: must be an integer from 0 to ${max}`);
  return value;
}

export function requireString(field: string, value: unknown, maxLength: number): string {
  if (typeof value !== 'string' || value.length > maxLength) throw bad(`${field}: must be a string`);
  return value;
}

/** The record of a stored instance as it goes on the wire, with the lease left as this peer sees it. */
export function toWireRecord(entry: StoredInstance, view: LeaseView): WireRecord {
  const { record } = entry;
  const wire = { ...record, leaseRemainingMs: leaseRemainingMs(entry, view) };
  // Extensions travel as fields of `data` (the form peers of the previous version read).
  if (record.data.extensions !== undefined) wire.data = lowerExtensions(record.data) as unknown as InstanceRecord['data'];
  return wire;
}

/**
 * A `replicate` request for these stored instances, encoded at once, with the same JSON as
 * `JSON.stringify` of the request. Each wire record (a copy of its record with the lease left
 * now) is written out as soon as it is made, instead of all of them being held, as the request
 * object held them, for the call's whole round trip (issue 36). The pieces are joined into one
 * flat string, which the transport measures and sends without copying.
 */
export function encodeReplicate(from: string, entries: readonly StoredInstance[], view: LeaseView, repair = false): EncodedRequest<'replicate'> {
  const parts = [`{"from":${JSON.stringify(from)},"records":[`];
  entries.forEach((entry, i) => {
    if (i > 0) parts.push(',');
    parts.push(JSON.stringify(toWireRecord(entry, view)));
  });
  parts.push(repair ? '],"repair":true}' : ']}');
  return new EncodedRequest(parts.join(''), entries.length);
}

/** Splits a wire record into the record and the lease it carries. */
export function fromWireRecord(wire: WireRecord): { record: InstanceRecord; leaseRemainingMs: number } {
  // Every field in one literal, not a rest spread: the store keeps this object for every
  // replicated instance, and a spread's copy keeps most of its fields in a separate property
  // array (120 bytes a record rather than 96).
  const record: InstanceRecord = {
    namespace: wire.namespace,
    service: wire.service,
    instanceId: wire.instanceId,
    data: wire.data,
    version: wire.version,
    owner: wire.owner,
    deleted: wire.deleted,
    leaseDurationMs: wire.leaseDurationMs,
    registeredAtMs: wire.registeredAtMs,
  };
  return { record, leaseRemainingMs: wire.leaseRemainingMs };
}
