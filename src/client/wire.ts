import { instanceStatuses, type Instance } from './types.js';

/** A `snapshot` event: every instance the peer serves for the service now. */
export interface SnapshotMessage {
  type: 'snapshot';
  service: string;
  revision: number;
  instances: Instance[];
}

/** A `delta` event: what changed in the service since the last event. */
export interface DeltaMessage {
  type: 'delta';
  service: string;
  revision: number;
  added: Instance[];
  changed: Instance[];
  removed: string[];
}

/** A `dropped` event: the peer cut this reader off for falling behind; reconnect. */
export interface DroppedMessage {
  type: 'dropped';
  message: string;
}

export type WatchMessage = SnapshotMessage | DeltaMessage | DroppedMessage;

/** A peer sent something the API does not document. */
export class WireError extends Error {
  override name = 'WireError';
}

type Json = Record<string, unknown>;

function object(value: unknown, what: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new WireError(`${what}: not an object`);
  return value as Json;
}

function field<T>(record: Json, name: string, check: (value: unknown) => value is T, what: string): T {
  const value = record[name];
  if (!check(value)) throw new WireError(`${what}.${name}: unexpected ${JSON.stringify(value)}`);
  return value;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isArray = (value: unknown): value is unknown[] => Array.isArray(value);

/**
 * Checks an instance object as peers answer it. The fields the client relies on (key,
 * address, status, weight, zone, version) must be there with their types; the rest is taken
 * as sent, so a newer peer may add fields.
 */
export function parseInstance(value: unknown, what = 'instance'): Instance {
  const record = object(value, what);
  field(record, 'instanceId', isString, what);
  field(record, 'service', isString, what);
  field(record, 'host', isString, what);
  field(record, 'port', isNumber, what);
  field(record, 'weight', isNumber, what);
  field(record, 'zone', isString, what);
  field(record, 'version', isString, what);
  const status = record.status;
  if (!instanceStatuses.includes(status as Instance['status'])) throw new WireError(`${what}.status: unexpected ${JSON.stringify(status)}`);
  return record as unknown as Instance;
}

/** Parses the JSON data of one watch event; throws a WireError for anything undocumented. */
export function parseWatchMessage(event: string, data: string): WatchMessage | undefined {
  let payload: Json;
  try {
    payload = object(JSON.parse(data), event);
  } catch (error) {
    throw error instanceof WireError ? error : new WireError(`${event}: data is not JSON`);
  }
  switch (event) {
    case 'snapshot':
      return {
        type: 'snapshot',
        service: field(payload, 'service', isString, event),
        revision: field(payload, 'revision', isNumber, event),
        instances: field(payload, 'instances', isArray, event).map((item) => parseInstance(item, `${event}.instances[]`)),
      };
    case 'delta':
      return {
        type: 'delta',
        service: field(payload, 'service', isString, event),
        revision: field(payload, 'revision', isNumber, event),
        added: field(payload, 'added', isArray, event).map((item) => parseInstance(item, `${event}.added[]`)),
        changed: field(payload, 'changed', isArray, event).map((item) => parseInstance(item, `${event}.changed[]`)),
        removed: field(payload, 'removed', isArray, event).map((item) => field(object(item, `${event}.removed[]`), 'instanceId', isString, `${event}.removed[]`)),
      };
    case 'dropped':
      return { type: 'dropped', message: typeof payload.message === 'string' ? payload.message : 'dropped' };
    default:
      // An event type this client does not know (a newer peer): skip it.
      return undefined;
  }
}
