import type { NumericSetting, Setting, SettingValues } from './settings.js';

/**
 * The readers of single fields (strings, ids, URLs, ports, enums, numeric settings), each
 * throwing a ConfigError that names the field and what is wrong with it.
 */

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/** A configuration problem: names the field and what is wrong with it. Exit code 2. */
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** A JSON object as the file holds it, before its fields are read. */
export type Json = Record<string, unknown>;

/** A JSON object (not null, not an array): what every section of the file must be. */
export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Refuses a field the section does not know: a typo must fail the start, not be ignored. */
export function rejectUnknown(object: Json, known: Set<string>, prefix: string): void {
  for (const field of Object.keys(object)) {
    if (!known.has(field)) throw new ConfigError(`${prefix}${field}`, 'is not a known setting');
  }
}

/** An optional non-empty string. */
export function readString(field: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) throw new ConfigError(field, 'must be a non-empty string');
  return value;
}

/** An optional peer id: letters, digits and `._:-`, so it fits in URLs, headers and file names. */
export function readId(field: string, value: unknown): string | undefined {
  const id = readString(field, value);
  if (id !== undefined && !ID_PATTERN.test(id)) {
    throw new ConfigError(field, 'must be 1-64 letters, digits, ".", "_", ":" or "-", starting with a letter or digit');
  }
  return id;
}

/** An optional base URL (http or https, no path), answered as its origin. */
export function readUrl(field: string, value: unknown): string | undefined {
  const text = readString(field, value);
  if (text === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(field, `must be an absolute http(s) URL (got ${JSON.stringify(text)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(field, 'must use http or https');
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new ConfigError(field, 'must be a base URL with no path, query or fragment');
  }
  return url.origin;
}

/** An optional port, 0 to 65535, as a number or a string of digits (flags and environment are strings). */
export function readPort(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const port = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(field, `must be an integer from 0 to 65535 (got ${JSON.stringify(value)})`);
  }
  return port;
}

/** An optional value out of a fixed list. */
export function readEnum<T extends string>(field: string, value: unknown, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new ConfigError(field, `must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  }
  return value as T;
}

/** Checks one numeric setting against its table entry. */
export function readSetting(field: string, value: unknown, setting: NumericSetting): number {
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (setting.kind !== 'int' || Number.isInteger(value)) &&
    value >= setting.min &&
    value <= setting.max;
  if (!ok) {
    const what = setting.kind === 'int' ? 'an integer' : 'a number';
    throw new ConfigError(field, `must be ${what} from ${setting.min} to ${setting.max} (got ${JSON.stringify(value)})`);
  }
  return value as number;
}

/** A section of numeric and enum settings against its table (settings.ts), on top of `base`. */
export function readSettings<T extends Record<string, Setting>>(
  table: T,
  base: SettingValues<T>,
  input: Json,
  prefix: string,
): SettingValues<T> {
  const out: Record<string, unknown> = { ...base };
  for (const [name, setting] of Object.entries(table)) {
    if (input[name] === undefined) continue;
    out[name] =
      setting.kind === 'enum'
        ? readEnum(`${prefix}${name}`, input[name], setting.values)
        : readSetting(`${prefix}${name}`, input[name], setting);
  }
  return out as SettingValues<T>;
}

/** Throws the ConfigError for `field`: for use inside expressions. */
export function fail(field: string, problem: string): never {
  throw new ConfigError(field, problem);
}
