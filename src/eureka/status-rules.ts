import type { EurekaAttributes, EurekaView } from './attributes.js';
import { instanceStatuses, type InstanceData, type InstanceStatus } from '../registry/types.js';

/**
 * Eureka's status rules, as pure functions. Netflix Eureka decides an instance's status with a
 * chain of rules where the first that matches wins (its `FirstMatchWinsCompositeRule` of
 * `DownOrStartingRule`, `OverrideExistsRule`, `LeaseExistsRule`, then the client's own word),
 * applied on register and on renew; operators set and remove overrides with
 * `PUT/DELETE .../status`. See docs/eureka.md for the table.
 */

/** Eureka's statuses: ours plus `UNKNOWN`, which Eureka uses for "no override". */
export type EurekaStatus = InstanceStatus | 'UNKNOWN';

/** A status as Eureka reads one: case-insensitive; undefined when it is not a status at all. */
export function toEurekaStatus(value: unknown): EurekaStatus | undefined {
  if (typeof value !== 'string') return undefined;
  const upper = value.toUpperCase();
  if (upper === 'UNKNOWN') return 'UNKNOWN';
  return (instanceStatuses as readonly string[]).includes(upper) ? (upper as InstanceStatus) : undefined;
}

export interface StatusInputs {
  /** What the client reports about itself (register body, or a heartbeat's `status`). */
  reported: InstanceStatus;
  /** The operator's override held for the instance, if any. */
  override: InstanceStatus | null;
  /** The status of the instance as registered before this request, if it was registered. */
  existing: InstanceStatus | null;
}

/**
 * Which status wins, first match first:
 * 1. the client says DOWN or STARTING: believe it (a failing health check must take it out);
 * 2. an override exists: the override (an operator took it out of, or put it into, service);
 * 3. it was already registered UP or OUT_OF_SERVICE: keep that (a starting client must not
 *    undo a status the registry holds);
 * 4. otherwise what the client says.
 */
export function resolveStatus(inputs: StatusInputs): InstanceStatus {
  const { reported, override, existing } = inputs;
  if (reported === 'DOWN' || reported === 'STARTING') return reported;
  if (override !== null) return override;
  if (existing === 'UP' || existing === 'OUT_OF_SERVICE') return existing;
  return reported;
}

/** The data of a Eureka registration as the client sent it (status = what it reports). */
export type EurekaData = InstanceData & { eureka: EurekaAttributes };

// The rules below work on the Eureka view of data (attributes.ts: `eurekaView` of what is
// stored, `toCoreData` / `toCorePatch` of what they decide).

export interface RegistrationRequest {
  data: EurekaData;
  leaseDurationMs: number;
  /** The body's `overriddenStatus`, null for none or `UNKNOWN`. */
  overriddenStatus: InstanceStatus | null;
  /** The body's `lastDirtyTimestamp`, null when it sent none. */
  lastDirtyTimestampMs: number | null;
}

export interface CurrentInstance {
  data: EurekaView;
  leaseDurationMs: number;
}

/**
 * What a register stores, given what is registered now (Eureka's `register`):
 * - a register whose dirty timestamp is older than the one held is stale: the held data stays
 *   (the lease is renewed all the same);
 * - an override held survives re-registration; the body's override is taken only when none
 *   is held (Eureka's "initial state transfer");
 * - the status follows `resolveStatus`.
 */
export function planRegistration(
  request: RegistrationRequest,
  current: CurrentInstance | undefined,
  nowMs: number,
): { data: EurekaView; leaseDurationMs: number } {
  const held = current?.data.eureka;
  if (held && request.lastDirtyTimestampMs !== null && held.lastDirtyTimestampMs > request.lastDirtyTimestampMs) {
    return { data: current.data, leaseDurationMs: current.leaseDurationMs };
  }
  const override = held?.overriddenStatus ?? request.overriddenStatus;
  const reported = request.data.eureka.reportedStatus;
  const status = resolveStatus({ reported, override, existing: current?.data.status ?? null });
  const lastDirtyTimestampMs = request.lastDirtyTimestampMs ?? held?.lastDirtyTimestampMs ?? nowMs;
  return {
    data: { ...request.data, status, eureka: { ...request.data.eureka, overriddenStatus: override, lastDirtyTimestampMs } },
    leaseDurationMs: request.leaseDurationMs,
  };
}

/** A status change to write: the status, and the Eureka attributes when the instance has them. */
export type StatusPatch = Pick<EurekaView, 'status' | 'eureka'>;

/** What a heartbeat's query string says (all optional, as clients send them). */
export interface RenewalQuery {
  status?: InstanceStatus;
  /** `overriddenstatus`; null for `UNKNOWN`. */
  overriddenStatus?: InstanceStatus | null;
  lastDirtyTimestampMs?: number;
}

export type RenewalDecision =
  /** Renewed; `patch` (when not null) is a status change to write. */
  | { kind: 'renewed'; patch: StatusPatch | null }
  /** The client holds newer data than the registry: answer 404 so that it registers again. */
  | { kind: 'register-again' };

/**
 * What a heartbeat does beyond renewing the lease (Eureka's `renewLease`):
 * - the client's `lastDirtyTimestamp` is newer than the one held: its last register was lost,
 *   so it must register again (404);
 * - it reports a status other than the one it last reported: a status change by the client,
 *   resolved by the rules (an override held still wins);
 * - it carries an `overriddenstatus` while none is held: the override is adopted, as a
 *   register body's would be.
 * Instances registered through `/v1` carry no Eureka attributes: a heartbeat only renews them.
 */
export function decideRenewal(current: EurekaView, query: RenewalQuery): RenewalDecision {
  const held = current.eureka;
  if (!held) return { kind: 'renewed', patch: null };
  if (query.lastDirtyTimestampMs !== undefined && query.lastDirtyTimestampMs > held.lastDirtyTimestampMs) {
    return { kind: 'register-again' };
  }
  const override = held.overriddenStatus ?? query.overriddenStatus ?? null;
  const reported = query.status ?? held.reportedStatus;
  if (override === held.overriddenStatus && reported === held.reportedStatus) return { kind: 'renewed', patch: null };
  const status = resolveStatus({ reported, override, existing: current.status });
  return { kind: 'renewed', patch: { status, eureka: { ...held, reportedStatus: reported, overriddenStatus: override } } };
}

function laterDirty(held: EurekaAttributes, lastDirtyTimestampMs: number | undefined): number {
  return Math.max(held.lastDirtyTimestampMs, lastDirtyTimestampMs ?? 0);
}

/**
 * `PUT .../status?value=V` (Eureka's `statusUpdate`): when the status differs, V becomes both
 * the override and the status, and a newer `lastDirtyTimestamp` is kept. A status equal to the
 * current one changes nothing, not even the override (as in Eureka). An instance registered
 * through `/v1` has no override to hold: its status is simply set. Null: nothing to write.
 */
export function planStatusOverride(
  current: EurekaView,
  value: InstanceStatus,
  lastDirtyTimestampMs?: number,
): StatusPatch | null {
  if (current.status === value) return null;
  const held = current.eureka;
  if (!held) return { status: value };
  return {
    status: value,
    eureka: { ...held, overriddenStatus: value, lastDirtyTimestampMs: laterDirty(held, lastDirtyTimestampMs) },
  };
}

/**
 * `DELETE .../status[?value=V]` (Eureka's `deleteStatusOverride`): when an override is held it
 * is removed and the status becomes V. Without V (or with `UNKNOWN`), Eureka sets the status
 * UNKNOWN and makes the next heartbeat answer 404 so that the client registers again with its
 * own status; we hold that status already (`reportedStatus`) and go straight to it. No
 * override held: nothing changes.
 */
export function planOverrideRemoval(
  current: EurekaView,
  value: InstanceStatus | undefined,
  lastDirtyTimestampMs?: number,
): StatusPatch | null {
  const held = current.eureka;
  if (!held || held.overriddenStatus === null) return null;
  return {
    status: value ?? held.reportedStatus,
    eureka: { ...held, overriddenStatus: null, lastDirtyTimestampMs: laterDirty(held, lastDirtyTimestampMs) },
  };
}
