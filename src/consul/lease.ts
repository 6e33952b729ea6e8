import { aggregateStatus, type StoredCheck } from './fields.js';

/** The lease bounds of the cluster (`minLeaseDurationMs`, `maxLeaseDurationMs`). */
export interface LeaseLimits {
  minLeaseDurationMs: number;
  maxLeaseDurationMs: number;
}

/**
 * The lease of an instance registered through Consul, from its TTL checks. A TTL check is our
 * heartbeat, and the lease is what removes an instance whose client is gone:
 * - no check: the longest lease (the client registers again to keep it, see docs/consul.md);
 * - healthy (no check critical): the longest TTL plus `DeregisterCriticalServiceAfter`, so a
 *   client that stops renewing is first shown critical (the TTL sweep) and then removed;
 * - some check critical: `DeregisterCriticalServiceAfter`, counted from the moment it went
 *   critical (the write that marks it re-registers with this lease), as Consul does.
 * A check without `DeregisterCriticalServiceAfter` stays critical for the longest lease, since
 * the record must end some time (Consul keeps it for ever). Always within the cluster's bounds.
 */
export function leaseForChecks(checks: readonly StoredCheck[], limits: LeaseLimits): number {
  const clamp = (ms: number) => Math.min(limits.maxLeaseDurationMs, Math.max(limits.minLeaseDurationMs, Math.round(ms)));
  if (checks.length === 0) return limits.maxLeaseDurationMs;
  const critical = aggregateStatus(checks) === 'critical';
  const relevant = critical ? checks.filter((check) => check.status === 'critical') : checks;
  const afters = relevant.map((check) => check.deregisterAfterMs).filter((ms): ms is number => ms !== null);
  const deregisterAfterMs = afters.length > 0 ? Math.min(...afters) : limits.maxLeaseDurationMs;
  if (critical) return clamp(deregisterAfterMs);
  return clamp(Math.max(...checks.map((check) => check.ttlMs)) + deregisterAfterMs);
}
