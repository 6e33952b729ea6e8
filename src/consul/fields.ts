import type { ProtocolExtension, ProtocolExtensions } from '../registry/extensions.js';
import type { InstanceData } from '../registry/types.js';
import { badRequest } from './errors.js';

/**
 * How the Consul API stores what our instance record has no field for: in the record's
 * `consul` protocol extension (src/registry/extensions.ts), typed, replicated and persisted
 * with the record like the Eureka attributes, and bounded (`CONSUL_EXTENSION_MAX_BYTES`):
 *
 * - `id`: the Consul service ID it was registered with (our instance id): an instance with
 *   the extension was registered through the Consul API, and the agent routes find it by this
 *   ID (directory.ts) rather than by the first service that has an instance of that id;
 * - `tags`: the service's `Tags`;
 * - `checks`: its TTL checks (`StoredCheck`);
 * - `warningWeight`: `Weights.Warning`, when the register gave one other than 1.
 *
 * The metadata is the service's `Meta`, both ways, under the client limits of /v1. Records
 * written before the extension kept these as JSON in metadata keys under the reserved prefix
 * `consul.` (`consul.tags`, `consul.checks`, `consul.warning-weight`); they are still read
 * from there when a record has no extension, and a `/v1` or Eureka client may still give its
 * instance Consul tags with `consul.tags`.
 */
export const CONSUL_EXTENSION = 'consul';
export const RESERVED_PREFIX = 'consul.';
export const TAGS_KEY = 'consul.tags';
export const CHECKS_KEY = 'consul.checks';
export const WARNING_WEIGHT_KEY = 'consul.warning-weight';

/** What the `consul` extension of a record holds. */
export interface ConsulRecordExtension {
  id: string;
  tags: string[];
  checks: StoredCheck[];
  warningWeight?: number;
}

/**
 * Most bytes the `consul` extension of one record may take as JSON, with every check's output
 * counted at its longest (so that no check update can grow a record past it): half of what all
 * extensions of a record may take (extensionLimits.maxJsonBytes, 16 KB). Past it, the register
 * is refused, naming what to shorten.
 */
export const CONSUL_EXTENSION_MAX_BYTES = 8_192;

/** Most tags one instance may carry, and the longest tag. */
export const TAGS_MAX = 64;
export const TAG_MAX_LENGTH = 256;
/** Most TTL checks one instance may carry. */
export const CHECKS_MAX = 16;
/**
 * Longest check output kept. Consul keeps 4 KB (`check_output_max_size`), but an output here is
 * part of a replicated record: it is written only with a change of the check's status
 * (check-update.ts), and bounded so that 16 checks fit the extension's bound.
 */
export const OUTPUT_MAX_LENGTH = 256;
const TEXT_MAX_LENGTH = 256;

export type CheckStatus = 'passing' | 'warning' | 'critical';
export const CHECK_STATUSES: readonly CheckStatus[] = ['passing', 'warning', 'critical'];

/** One TTL check as `consul.checks` holds it. */
export interface StoredCheck {
  id: string;
  name: string;
  ttlMs: number;
  status: CheckStatus;
  output: string;
  notes: string;
  /** `DeregisterCriticalServiceAfter` in ms; null when the check gave none. */
  deregisterAfterMs: number | null;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

/** The `consul` extension of a record's data, when it was registered through the Consul API. */
export function consulExtensionOf(data: InstanceData): ConsulRecordExtension | undefined {
  const extension = data.extensions?.[CONSUL_EXTENSION];
  if (extension === undefined || typeof extension.id !== 'string') return undefined;
  const checks = Array.isArray(extension.checks) ? extension.checks.filter(isStoredCheck) : [];
  const warningWeight = typeof extension.warningWeight === 'number' ? extension.warningWeight : undefined;
  return { id: extension.id, tags: isStringArray(extension.tags) ? extension.tags : [], checks, ...(warningWeight === undefined ? {} : { warningWeight }) };
}

/** A JSON array of one kind from a legacy metadata key (none when absent or unreadable). */
function legacyArray<T>(metadata: Readonly<Record<string, string>>, key: string, keep: (value: unknown) => value is T): T[] {
  const raw = metadata[key];
  if (raw === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? parsed.filter(keep) : [];
  } catch {
    return [];
  }
}

/** The Consul tags of an instance: its extension's, else its `consul.tags` metadata key's. */
export function tagsOf(data: InstanceData): string[] {
  return consulExtensionOf(data)?.tags ?? legacyArray(data.metadata, TAGS_KEY, (tag): tag is string => typeof tag === 'string');
}

function isStoredCheck(value: unknown): value is StoredCheck {
  if (typeof value !== 'object' || value === null) return false;
  const check = value as Record<string, unknown>;
  return (
    typeof check.id === 'string' &&
    typeof check.name === 'string' &&
    typeof check.ttlMs === 'number' &&
    CHECK_STATUSES.includes(check.status as CheckStatus) &&
    typeof check.output === 'string' &&
    typeof check.notes === 'string' &&
    (check.deregisterAfterMs === null || typeof check.deregisterAfterMs === 'number')
  );
}

/** The TTL checks of an instance (none for instances not registered through Consul). */
export function checksOf(data: InstanceData): StoredCheck[] {
  return consulExtensionOf(data)?.checks ?? legacyArray(data.metadata, CHECKS_KEY, isStoredCheck);
}

/** The service's `Meta`: the metadata without the reserved keys. */
export function userMetaOf(metadata: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(metadata)) if (!key.startsWith(RESERVED_PREFIX)) out[key] = metadata[key]!;
  return out;
}

/** `Weights.Warning` of an instance (1 when it gave none). */
export function warningWeightOf(data: InstanceData): number {
  const extension = consulExtensionOf(data);
  const value = extension ? (extension.warningWeight ?? 1) : Number(data.metadata[WARNING_WEIGHT_KEY]);
  return Number.isFinite(value) && value >= 0 ? value : 1;
}

/** The record's extensions with the `consul` one set to `extension` (the others kept). */
function withExtension(data: InstanceData, extension: ConsulRecordExtension): ProtocolExtensions {
  return { ...data.extensions, [CONSUL_EXTENSION]: extension as unknown as ProtocolExtension };
}

/** The extensions of `data` with its Consul checks replaced (everything else kept). */
export function withChecks(data: InstanceData, instanceId: string, checks: readonly StoredCheck[]): ProtocolExtensions {
  // A record of before the extension (legacy metadata keys) moves to it at its first check write.
  const current = consulExtensionOf(data) ?? { id: instanceId, tags: tagsOf(data), checks: [], warningWeight: warningWeightOf(data) };
  return withExtension(data, { ...current, checks: [...checks] });
}

/**
 * The `consul` extension a register stores, checked against its bound with every output at its
 * longest. Refuses a `Meta` key under the reserved prefix (the legacy keys would read it).
 */
export function consulExtension(id: string, meta: Record<string, string>, tags: readonly string[], checks: readonly StoredCheck[], warningWeight: number | undefined): ConsulRecordExtension {
  for (const key of Object.keys(meta)) {
    if (key.startsWith(RESERVED_PREFIX)) throw badRequest(`Meta: key "${key.slice(0, 64)}" uses the prefix "${RESERVED_PREFIX}" this registry reserves`);
  }
  const extension: ConsulRecordExtension = { id, tags: [...tags], checks: [...checks], ...(warningWeight === undefined || warningWeight === 1 ? {} : { warningWeight }) };
  const longest = checks.reduce((sum, check) => sum + (OUTPUT_MAX_LENGTH - check.output.length), Buffer.byteLength(JSON.stringify(extension)));
  if (longest > CONSUL_EXTENSION_MAX_BYTES) {
    throw badRequest(
      `Tags, Checks: ${longest} bytes with every check output at its longest (${OUTPUT_MAX_LENGTH} characters), over the ${CONSUL_EXTENSION_MAX_BYTES} this registry keeps per instance; use fewer or shorter tags, check names and notes, or fewer checks`,
    );
  }
  return extension;
}

/** The worst status of a set of checks (no checks: passing). */
export function aggregateStatus(checks: readonly { status: CheckStatus }[]): CheckStatus {
  let worst: CheckStatus = 'passing';
  for (const check of checks) {
    if (check.status === 'critical') return 'critical';
    if (check.status === 'warning') worst = 'warning';
  }
  return worst;
}

/** Text for a check's output or notes, cut to its bound. */
export function boundedText(value: string, maxLength = TEXT_MAX_LENGTH): string {
  return value.length > maxLength ? value.slice(0, maxLength) : value;
}
