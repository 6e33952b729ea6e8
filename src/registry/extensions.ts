import { invalid } from '../errors.js';
import type { InstanceData } from './types.js';

/**
 * Protocol extensions: what a protocol adapter keeps about an instance beyond the core fields
 * (a client's own host name, virtual addresses, data-center info...). The core carries them
 * opaquely, by the adapter's name, replicates and persists them with the record, and never
 * reads inside: each adapter owns, validates and interprets its own.
 * Plain JSON objects only, bounded in size so that no adapter can bloat every replicated write.
 */
export type ProtocolExtension = Readonly<Record<string, unknown>>;
export type ProtocolExtensions = Readonly<Record<string, ProtocolExtension>>;

/** Bounds of the extensions of one record, checked where they enter (adapters, the wire, the disk). */
export const extensionLimits = {
  /** Most extensions (protocols) one record carries. */
  maxCount: 8,
  /** Most bytes of all extensions of one record, as JSON. */
  maxJsonBytes: 16_384,
} as const;

const NAME = /^[a-z][a-z0-9-]{0,31}$/;

/**
 * Data fields of the core: any other field of a record's data on the wire or on disk that holds
 * an object is an extension of that name. That is the wire form (each extension a field of
 * `data`, as the one extension that came before them always was), so peers of the previous
 * version keep reading the records of this one and the other way round.
 */
export const CORE_DATA_FIELDS: ReadonlySet<string> = new Set([
  'host',
  'port',
  'securePort',
  'status',
  'weight',
  'zone',
  'metadata',
  'group',
  'renewalIntervalMs',
  'extensions',
]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks a set of extensions (names, plain objects, bounds); throws REG_ERR_VALIDATION naming `field`. */
export function checkExtensions(field: string, extensions: Record<string, unknown>): ProtocolExtensions {
  const names = Object.keys(extensions);
  if (names.length > extensionLimits.maxCount) throw invalid(field, `must hold at most ${extensionLimits.maxCount} protocol extensions`);
  for (const name of names) {
    if (!NAME.test(name)) throw invalid(`${field}.${name}`, 'must be named with 1-32 lower-case letters, digits or "-"');
    if (!isObject(extensions[name])) throw invalid(`${field}.${name}`, 'must be an object');
  }
  const bytes = Buffer.byteLength(JSON.stringify(extensions));
  if (bytes > extensionLimits.maxJsonBytes) throw invalid(field, `must be at most ${extensionLimits.maxJsonBytes} bytes as JSON (got ${bytes})`);
  return extensions as ProtocolExtensions;
}

/**
 * The extensions of a record's data in its wire or disk form: its `extensions` object (the
 * in-memory form, written to disk) merged with every non-core object field (the wire form, and
 * records written before extensions existed). Undefined when there are none.
 */
export function liftExtensions(field: string, data: Record<string, unknown>): ProtocolExtensions | undefined {
  // Every replicated and recovered record comes through here, and almost none has an
  // extension: nothing is allocated until one is found (`Object.entries` and an empty object
  // per record were 4% of a joining peer's CPU at 1,000,000, bench/findings.md 2026-12-07).
  let found: Record<string, unknown> | undefined = isObject(data.extensions) ? { ...data.extensions } : undefined;
  for (const name in data) {
    if (CORE_DATA_FIELDS.has(name) || !Object.hasOwn(data, name)) continue;
    const value = data[name];
    if (isObject(value)) (found ??= {})[name] = value;
  }
  return found === undefined || Object.keys(found).length === 0 ? undefined : checkExtensions(field, found);
}

/**
 * The renewal interval a record written before `renewalIntervalMs` existed declared: its
 * extension's `renewalIntervalSecs` (the one extension of those versions kept it there).
 * Read only where `renewalIntervalMs` is absent, so that self-preservation keeps expecting
 * what those clients said they send while a cluster upgrades.
 */
export function legacyRenewalIntervalMs(extensions: ProtocolExtensions | undefined): number | undefined {
  for (const extension of Object.values(extensions ?? {})) {
    const secs = extension.renewalIntervalSecs;
    if (typeof secs === 'number' && Number.isInteger(secs) && secs > 0 && secs <= 86_400) return secs * 1_000;
  }
  return undefined;
}

/** The wire form of a record's data: each extension as a field of `data` (see CORE_DATA_FIELDS). */
export function lowerExtensions(data: InstanceData): Record<string, unknown> {
  if (data.extensions === undefined) return data as unknown as Record<string, unknown>;
  const { extensions, ...core } = data;
  return { ...core, ...extensions };
}

/** Whether two records carry the same extensions (deep equality of JSON values; key order does not matter). */
export function sameExtensions(a: ProtocolExtensions | undefined, b: ProtocolExtensions | undefined): boolean {
  return sameJson(a, b);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  if (aKeys.length !== Object.keys(b).length) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  return aKeys.every((key) => Object.hasOwn(y, key) && sameJson(x[key], y[key]));
}
