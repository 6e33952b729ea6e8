/**
 * What every protocol listener's section of the file shares (`port`, `namespaces`), and the
 * readers each adapter's declaration (src/<protocol>/declaration.ts) reads its own fields
 * with. A bad value throws a ProtocolConfigError naming the field; the loader turns it into
 * its ConfigError, so the peer stops at start with exit code 2 like for every other setting.
 * No adapter is named here: each section is declared in its adapter's folder.
 */

/** What every protocol listener has: its port (null: off) and the namespaces it serves. */
export interface ListenerConfig {
  /** TCP (and for DNS also UDP) port on the peer's host; null leaves the listener off. */
  port: number | null;
  /** Namespaces this protocol exposes (it carries no credentials of its own, or maps them). */
  namespaces: string[];
}

/** A problem with one field; load.ts turns it into its ConfigError. */
export class ProtocolConfigError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

/** A section of the file before its fields are read. */
export type SectionJson = Record<string, unknown>;

const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

function sectionOf(name: string, value: unknown): SectionJson {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ProtocolConfigError(name, 'must be an object');
  return value as SectionJson;
}

function rejectUnknown(section: SectionJson, known: readonly string[], name: string): void {
  for (const field of Object.keys(section)) {
    if (!known.includes(field)) throw new ProtocolConfigError(`${name}.${field}`, `is not a known setting (known: ${known.join(', ')})`);
  }
}

/** `namespaces`: a non-empty array of namespace names; `['default']` when absent. */
export function readNamespaces(field: string, value: unknown): string[] {
  if (value === undefined) return ['default'];
  if (!Array.isArray(value) || value.length === 0 || !value.every((item) => typeof item === 'string' && NAMESPACE.test(item))) {
    throw new ProtocolConfigError(field, 'must be a non-empty array of namespace names, for example ["default"]');
  }
  return [...new Set(value as string[])];
}

/**
 * One listener's section. `port` is the value from the highest source that has it (flag,
 * environment or file), already read as a port number by the loader, or undefined.
 */
export function readListener(name: string, doc: unknown, port: number | undefined, extra: readonly string[] = []): { section: SectionJson; config: ListenerConfig } {
  const section = sectionOf(name, doc);
  rejectUnknown(section, ['port', 'namespaces', ...extra], name);
  return { section, config: { port: port ?? null, namespaces: readNamespaces(`${name}.namespaces`, section.namespaces) } };
}

/** An optional integer within `min..max` (inclusive); `fallback` when absent. */
export function readInteger(field: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ProtocolConfigError(field, `must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
  }
  return value;
}
