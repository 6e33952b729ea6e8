import type { StoredInstance } from '../registry/types.js';

/**
 * Global self-preservation, Eureka's rule done right: when the renewals this peer received
 * in the last window fall below `thresholdRatio` of the number expected from the instances
 * it owns that were renewing, the silence is more likely a network problem on this peer's
 * side than a mass death, and the peer stops evicting until the rate recovers.
 *
 * Only an instance that renewed its lease at least once (a heartbeat, or a register again) is
 * expected to go on renewing: one registered and never heard from again (a test, a script, a
 * register example, a client that crashed at start) says nothing about the network, and a
 * mass of them must not stop evictions (Eureka counts them, and trips on them).
 *
 * Unlike Eureka: the expected number follows registrations and cancels both ways at once
 * (no 15-minute refresh, no 15% floor); each instance counts only from when this peer began
 * to own it (so clients still arriving after a start or a mass registration do not trip it);
 * a threshold of 0 switches the rule off explicitly (it never silently disables expiry); and
 * with fewer than `minOwnedInstances` owned instances there is too little to judge from, so
 * the rule stays off and a lone instance that dies is evicted.
 */

/** Who decides: the rule (`auto`), or an operator who switched it `off`. */
export type GuardMode = 'auto' | 'off';

export interface RenewalFigures {
  /**
   * Renewals received in the window, plus a lateness margin of half a heartbeat interval
   * (registers, heartbeats, takeovers of owned instances).
   */
  renewals: number;
  /** Renewals expected in the window from the owned instances that were renewing. */
  expected: number;
  /** Owned instances that renewed at least once (`hasRenewed`): the ones whose renewals are expected. */
  ownedInstances: number;
}

export interface SelfPreservationPolicy {
  /** Below `expected * thresholdRatio` renewals, self-preservation is on; 0 switches it off. */
  thresholdRatio: number;
  minOwnedInstances: number;
  /** Before this time (start + warm-up) it never engages. */
  warmUpUntilMs: number;
}

export interface Assessment {
  active: boolean;
  reason: string;
}

/** Is self-preservation on? Pure; see the module comment for the rules. */
export function assessSelfPreservation(
  figures: RenewalFigures,
  policy: SelfPreservationPolicy,
  nowMs: number,
  mode: GuardMode,
): Assessment {
  if (mode === 'off') return { active: false, reason: 'switched off by an operator' };
  if (policy.thresholdRatio <= 0) return { active: false, reason: 'disabled in the configuration (threshold 0)' };
  if (nowMs < policy.warmUpUntilMs) return { active: false, reason: 'warming up after start' };
  if (figures.ownedInstances < policy.minOwnedInstances) {
    return { active: false, reason: `only ${figures.ownedInstances} owned instances that heartbeat: too few to judge` };
  }
  const needed = figures.expected * policy.thresholdRatio;
  if (figures.renewals < needed) {
    return {
      active: true,
      reason: `received ${figures.renewals} renewals in the last window, below the ${Math.ceil(needed)} expected (${Math.round(policy.thresholdRatio * 100)}% of ${Math.round(figures.expected)} from ${figures.ownedInstances} instances that were heartbeating): probably a network problem on this peer's side`,
    };
  }
  return { active: false, reason: 'renewals at or above the threshold' };
}

/**
 * Renewals one owned instance should have sent in the window ending now: one per renewal
 * interval, counted from when this peer began to own it (at most the whole window).
 */
export function expectedRenewals(ownedSinceMs: number, nowMs: number, windowMs: number, intervalMs: number): number {
  const coveredMs = Math.max(0, Math.min(windowMs, nowMs - ownedSinceMs));
  return coveredMs / intervalMs;
}

/**
 * Whether an instance renewed its lease at least once since it was first registered: a
 * heartbeat or a register again set its lease from a later time than the registration.
 * Pure, from what every stored instance has (no extra state per instance): a lease never
 * renewed ends exactly `leaseDurationMs` after `registeredAtMs`. A takeover (a heartbeat
 * here) and a restart (a grace lease from now) count as renewed, as they should.
 */
export function hasRenewed(entry: Pick<StoredInstance, 'leaseExpiresAtMs' | 'record'>): boolean {
  return entry.leaseExpiresAtMs - entry.record.leaseDurationMs > entry.record.registeredAtMs;
}
