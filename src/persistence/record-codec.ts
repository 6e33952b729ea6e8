import { isVersion } from '../clock/hlc.js';
import { CORE_DATA_FIELDS, legacyRenewalIntervalMs, liftExtensions } from '../registry/extensions.js';
import { instanceStatuses, type InstanceRecord } from '../registry/types.js';

/**
 * Checks a record read back from disk. A frame that passed its checksum holds what this peer
 * wrote, so this only catches a file written by something else (or by a bug); such a record
 * is treated like damage rather than loaded half-formed. Returns the record, or what is wrong.
 */
export function checkRecord(value: unknown): InstanceRecord | string {
  if (!isObject(value)) return 'not an object';
  for (const field of ['namespace', 'service', 'instanceId', 'owner'] as const) {
    if (typeof value[field] !== 'string' || value[field] === '') return `${field} is not a non-empty string`;
  }
  if (!isVersion(value.version)) return 'version is not a version';
  if (value.deleted !== null && value.deleted !== 'cancel' && value.deleted !== 'evict') return 'deleted is not null, cancel or evict';
  if (!isCount(value.leaseDurationMs)) return 'leaseDurationMs is not a count';
  if (!isCount(value.registeredAtMs)) return 'registeredAtMs is not a count';
  const dataProblem = checkData(value.data);
  if (dataProblem) return `data: ${dataProblem}`;
  return withExtensionsLifted(value as unknown as InstanceRecord);
}

/**
 * A record written before protocol extensions existed kept its one extension as a field of
 * `data` (registry/extensions.ts): lift such fields into `extensions`, as the wire does.
 */
function withExtensionsLifted(record: InstanceRecord): InstanceRecord {
  const data = record.data as unknown as Record<string, unknown>;
  if (Object.keys(data).every((field) => CORE_DATA_FIELDS.has(field))) return record;
  let extensions;
  try {
    extensions = liftExtensions('data', data);
  } catch {
    extensions = undefined;
  }
  const core = Object.fromEntries(Object.entries(data).filter(([field]) => CORE_DATA_FIELDS.has(field) && field !== 'extensions'));
  const renewalIntervalMs = typeof data.renewalIntervalMs === 'number' ? data.renewalIntervalMs : legacyRenewalIntervalMs(extensions);
  return {
    ...record,
    data: { ...(core as unknown as InstanceRecord['data']), ...(extensions ? { extensions } : {}), ...(renewalIntervalMs ? { renewalIntervalMs } : {}) },
  };
}

function checkData(data: unknown): string | null {
  if (!isObject(data)) return 'not an object';
  if (typeof data.host !== 'string') return 'host is not a string';
  if (!isCount(data.port)) return 'port is not a count';
  if (data.securePort !== null && !isCount(data.securePort)) return 'securePort is not a count or null';
  if (!(instanceStatuses as readonly unknown[]).includes(data.status)) return 'status is not a status';
  if (typeof data.weight !== 'number' || !Number.isFinite(data.weight)) return 'weight is not a number';
  if (typeof data.zone !== 'string') return 'zone is not a string';
  if (!isObject(data.metadata)) return 'metadata is not an object';
  for (const item of Object.values(data.metadata)) if (typeof item !== 'string') return 'metadata has a value that is not a string';
  return null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
