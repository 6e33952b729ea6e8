import type { ProtocolExtensions } from '../registry/extensions.js';
import type { InstanceData, InstanceStatus } from '../registry/types.js';
import { aggregateStatus, boundedText, checksOf, OUTPUT_MAX_LENGTH, withChecks, type CheckStatus, type StoredCheck } from './fields.js';
import { leaseForChecks, type LeaseLimits } from './lease.js';

/**
 * What a TTL check update (`/v1/agent/check/pass|warn|fail/:id`, `/v1/agent/check/update/:id`,
 * or the TTL sweep marking a check critical) does to the instance record. Pure: the route
 * applies the plan through the registry.
 *
 * - `renew`: the check was renewed (pass, warn, or update to one of those) and no check is
 *   critical: the lease is renewed, as a heartbeat, and nothing is replicated;
 * - `write`: the check's status changed: the record's `consul` extension, with the output
 *   given with that change (and the instance status: DOWN while a check is critical, UP again
 *   when none is), is written and replicated. An output given without a change of status is
 *   not written: a client that passes its check every few seconds with a new note (a load
 *   figure, a timestamp) would otherwise replicate its whole record to every peer each time,
 *   which is what heartbeats are kept local for (docs/consul.md, "TTL checks");
 * - `lease`: set when a write enters or leaves the critical state (or changes which checks are
 *   critical): the write is a register with this lease (lease.ts), so that
 *   `DeregisterCriticalServiceAfter` counts from the moment the instance went critical.
 * A `fail` on a check already critical changes nothing and renews nothing: the instance goes
 * on towards its removal.
 */
export interface CheckPlan {
  renew: boolean;
  write: { extensions: ProtocolExtensions; status: InstanceStatus } | null;
  lease: number | null;
}

export interface CheckChange {
  status: CheckStatus;
  /** New output; undefined keeps the current one. */
  output: string | undefined;
}

/** The check `checkId` of an instance, or undefined. */
export function findCheck(data: InstanceData, checkId: string): StoredCheck | undefined {
  return checksOf(data).find((check) => check.id === checkId);
}

function criticalIds(checks: readonly StoredCheck[]): string {
  return checks
    .filter((check) => check.status === 'critical')
    .map((check) => check.id)
    .join('\n');
}

/** The plan for one check update of instance `instanceId`; null when the instance has no such check. */
export function planCheckUpdate(data: InstanceData, instanceId: string, checkId: string, change: CheckChange, limits: LeaseLimits): CheckPlan | null {
  const checks = checksOf(data);
  const index = checks.findIndex((check) => check.id === checkId);
  if (index < 0) return null;
  const before = checks[index]!;
  const output = change.output === undefined || change.status === before.status ? before.output : boundedText(change.output, OUTPUT_MAX_LENGTH);
  const after: StoredCheck = { ...before, status: change.status, output };
  const next = checks.map((check, i) => (i === index ? after : check));
  const wasCritical = aggregateStatus(checks) === 'critical';
  const isCritical = aggregateStatus(next) === 'critical';
  const renew = change.status !== 'critical' && !isCritical;
  if (before.status === after.status && before.output === after.output) return { renew, write: null, lease: null };
  const status: InstanceStatus = isCritical ? 'DOWN' : data.status === 'DOWN' ? 'UP' : data.status;
  const leaseChanges = wasCritical !== isCritical || criticalIds(checks) !== criticalIds(next);
  return {
    renew,
    write: { extensions: withChecks(data, instanceId, next), status },
    lease: leaseChanges ? leaseForChecks(next, limits) : null,
  };
}
