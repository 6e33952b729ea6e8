import { badRequest } from './errors.js';

/**
 * How the Consul API stores what our instance record has no field for: in the instance's
 * metadata, under the reserved prefix `consul.` (Consul's own `Meta` keys may only hold
 * letters, digits, `_` and `-`, so no Consul key can collide with one of these):
 *
 * - `consul.tags`: the service's `Tags`, as a JSON array of strings (`["v1","primary"]`);
 *   a `/v1` or Eureka client gives an instance Consul tags by setting this key;
 * - `consul.checks`: its TTL checks, as a JSON array of `StoredCheck` (id, name, TTL, status,
 *   output, notes, DeregisterCriticalServiceAfter);
 * - `consul.warning-weight`: `Weights.Warning`, when the register gave one (`Weights.Passing`
 *   is the record's `weight`).
 *
 * Everything else in the metadata is the service's `Meta`, both ways. The values are written
 * by this adapter only, so they are bounded here (not by the client metadata limits, which
 * apply to `Meta`); they replicate with the record like any metadata.
 */
export const RESERVED_PREFIX = 'consul.';
export const TAGS_KEY = 'consul.tags';
export const CHECKS_KEY = 'consul.checks';
export const WARNING_WEIGHT_KEY = 'consul.warning-weight';

/** Most tags one instance may carry, and the longest tag. */
export const TAGS_MAX = 64;
export const TAG_MAX_LENGTH = 256;
/** Most TTL checks one instance may carry. */
export const CHECKS_MAX = 16;
/** Longest check output kept (Consul's default `check_output_max_size` is 4 KB). */
export const OUTPUT_MAX_LENGTH = 4_096;
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

/** The Consul tags of an instance's metadata (none when it has no valid `consul.tags`). */
export function tagsOf(metadata: Readonly<Record<string, string>>): string[] {
  const raw = metadata[TAGS_KEY];
  if (raw === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? parsed.filter((tag): tag is string => typeof tag === 'string') : [];
  } catch {
    return [];
  }
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

/** The TTL checks of an instance's metadata (none for instances not registered through Consul). */
export function checksOf(metadata: Readonly<Record<string, string>>): StoredCheck[] {
  const raw = metadata[CHECKS_KEY];
  if (raw === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    return Array.isArray(parsed) ? parsed.filter(isStoredCheck) : [];
  } catch {
    return [];
  }
}

/** The service's `Meta`: the metadata without the reserved keys. */
export function userMetaOf(metadata: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(metadata)) if (!key.startsWith(RESERVED_PREFIX)) out[key] = metadata[key]!;
  return out;
}

/** `Weights.Warning` of an instance (1 when it gave none). */
export function warningWeightOf(metadata: Readonly<Record<string, string>>): number {
  const value = Number(metadata[WARNING_WEIGHT_KEY]);
  return Number.isFinite(value) && value >= 0 ? value : 1;
}

/** The metadata with the checks replaced (everything else kept). */
export function withChecks(metadata: Readonly<Record<string, string>>, checks: readonly StoredCheck[]): Record<string, string> {
  const out = { ...metadata };
  if (checks.length === 0) delete out[CHECKS_KEY];
  else out[CHECKS_KEY] = JSON.stringify(checks);
  return out;
}

/** `Meta` plus the reserved keys: what a Consul register stores as the record's metadata. */
export function consulMetadata(
  meta: Record<string, string>,
  tags: readonly string[],
  checks: readonly StoredCheck[],
  warningWeight: number | undefined,
): Record<string, string> {
  for (const key of Object.keys(meta)) {
    if (key.startsWith(RESERVED_PREFIX)) throw badRequest(`Meta: key "${key.slice(0, 64)}" uses the prefix "${RESERVED_PREFIX}" this registry reserves`);
  }
  const out = { ...meta };
  if (tags.length > 0) out[TAGS_KEY] = JSON.stringify(tags);
  if (warningWeight !== undefined && warningWeight !== 1) out[WARNING_WEIGHT_KEY] = String(warningWeight);
  return withChecks(out, checks);
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
