import type { Logger } from '../log/logger.js';
import type { EvictionGuards } from '../registry/visibility.js';
import type { ServiceBudget } from './eviction-budget.js';
import { assessPartitionGuard, type OwnershipFigures } from './partition-guard.js';
import { RenewalWindow } from './renewal-window.js';
import { assessSelfPreservation, type GuardMode, type RenewalFigures } from './self-preservation.js';

export interface EvictionSafetyInit {
  startedAtMs: number;
  heartbeatIntervalMs: number;
  renewalThresholdRatio: number;
  renewalWindowMs: number;
  selfPreservationMinInstances: number;
  selfPreservationWarmUpMs: number;
  partitionGuardRatio: number;
  serviceEvictionMaxRatio: number;
  serviceEvictionWindowMs: number;
  evictionMaxPerRunRatio: number;
}

/** How many expired instances each guard kept at the last reaper run. */
export interface HeldCounts {
  selfPreservation: number;
  partitionGuard: number;
  serviceCap: number;
  runCap: number;
}

/** What `/v1/cluster` shows under `evictionSafety`. */
export interface EvictionSafetyStatus {
  selfPreservation: {
    active: boolean;
    mode: GuardMode;
    reason: string;
    renewalsInWindow: number;
    expectedRenewalsInWindow: number;
    thresholdRatio: number;
    ownedInstances: number;
    windowMs: number;
    warmUpUntilMs: number;
    sinceMs: number | null;
  };
  partitionGuard: {
    active: boolean;
    mode: GuardMode;
    reason: string;
    downOwnedShare: number;
    ratio: number;
    sinceMs: number | null;
  };
  serviceCap: { maxRatio: number; windowMs: number; servicesAtCap: string[] };
  runCap: { maxRatio: number };
  held: HeldCounts;
  heldTotal: HeldCounts;
}

const EMPTY_HELD: HeldCounts = { selfPreservation: 0, partitionGuard: 0, serviceCap: 0, runCap: 0 };

/**
 * The state behind the eviction guards of one peer: the renewal window, the per-service
 * eviction history, the operator's switches, and the current decisions. The reaper feeds it
 * one scan per run; the registry reads `guards()` so that what is served matches what the
 * reaper does. Entering and leaving each guard is logged once, at warn and info.
 */
export class EvictionSafety {
  readonly renewals: RenewalWindow;
  private selfPreservationMode: GuardMode = 'auto';
  private partitionGuardMode: GuardMode = 'auto';
  private current: EvictionGuards = { suspendOwnedExpiry: false, holdDownOwners: false };
  private selfReason = 'not assessed yet';
  private guardReason = 'not assessed yet';
  private selfSinceMs: number | null = null;
  private guardSinceMs: number | null = null;
  private renewalFigures: RenewalFigures = { renewals: 0, expected: 0, ownedInstances: 0 };
  private downOwnedShare = 0;
  private readonly evictions = new Map<string, number[]>();
  private readonly warnedServices = new Map<string, number>();
  private held: HeldCounts = { ...EMPTY_HELD };
  private readonly heldTotal: HeldCounts = { ...EMPTY_HELD };
  private readonly log: Logger;

  constructor(
    private readonly init: EvictionSafetyInit,
    logger: Logger,
  ) {
    // Renewals are counted over the window plus half a heartbeat interval, so that a heartbeat
    // arriving a little late (or a whole fleet started together, whose heartbeats all sit on
    // the window's edge at once) is not taken for a missed one.
    this.renewals = new RenewalWindow(init.renewalWindowMs + Math.round(init.heartbeatIntervalMs / 2));
    this.log = logger.child({ component: 'eviction-safety' });
  }

  /** The guards in force, as the registry's reads need them. */
  guards(): EvictionGuards {
    return this.current;
  }

  /** Whether an operator switched the partition guard off (its instances are then released on purpose). */
  get partitionGuardSwitchedOff(): boolean {
    return this.partitionGuardMode === 'off';
  }

  /** An operator's switch: `off` lifts a guard on purpose, `auto` hands it back to its rule. */
  setModes(modes: { selfPreservation?: GuardMode; partitionGuard?: GuardMode }): void {
    if (modes.selfPreservation) this.selfPreservationMode = modes.selfPreservation;
    if (modes.partitionGuard) this.partitionGuardMode = modes.partitionGuard;
    this.log.warn({ ...modes }, 'eviction guard mode changed by an operator');
  }

  /** Re-decides both global guards from one scan's figures; logs the transitions. */
  assess(nowMs: number, expected: number, ownedInstances: number, ownership: OwnershipFigures): EvictionGuards {
    this.renewalFigures = { renewals: this.renewals.count(nowMs), expected, ownedInstances };
    const self = assessSelfPreservation(
      this.renewalFigures,
      {
        thresholdRatio: this.init.renewalThresholdRatio,
        minOwnedInstances: this.init.selfPreservationMinInstances,
        warmUpUntilMs: this.init.startedAtMs + this.init.selfPreservationWarmUpMs,
      },
      nowMs,
      this.selfPreservationMode,
    );
    const guard = assessPartitionGuard(ownership, this.init.partitionGuardRatio, this.partitionGuardMode);
    this.downOwnedShare = guard.share;
    if (self.active !== this.current.suspendOwnedExpiry) {
      this.selfSinceMs = self.active ? nowMs : null;
      if (self.active) this.log.warn({ ...this.renewalFigures }, `self-preservation ON, evictions stopped: ${self.reason}`);
      else this.log.info({ ...this.renewalFigures }, `self-preservation OFF, evictions resume: ${self.reason}`);
    }
    if (guard.active !== this.current.holdDownOwners) {
      this.guardSinceMs = guard.active ? nowMs : null;
      if (guard.active) this.log.warn({ share: guard.share }, `partition guard ON: ${guard.reason}`);
      else this.log.info({ share: guard.share }, `partition guard OFF: ${guard.reason}`);
    }
    this.selfReason = self.reason;
    this.guardReason = guard.reason;
    this.current = { suspendOwnedExpiry: self.active, holdDownOwners: guard.active };
    return this.current;
  }

  /** Per-service budgets for this run: `sizes` are the served instances of each service. */
  serviceBudgets(nowMs: number, sizes: ReadonlyMap<string, number>): Map<string, ServiceBudget> {
    const budgets = new Map<string, ServiceBudget>();
    for (const [service, size] of sizes) {
      const evictedInWindow = this.evictionsInWindow(service, nowMs);
      budgets.set(service, { size: size + evictedInWindow, evictedInWindow });
    }
    return budgets;
  }

  recordEviction(service: string, nowMs: number): void {
    const times = this.evictions.get(service) ?? [];
    times.push(nowMs);
    this.evictions.set(service, times);
  }

  /** Notes what the guards kept this run; warns once per window for each capped service. */
  recordHeld(nowMs: number, held: HeldCounts, cappedServices: ReadonlyMap<string, number>): void {
    this.held = held;
    for (const key of Object.keys(held) as (keyof HeldCounts)[]) this.heldTotal[key] += held[key];
    for (const [service, count] of cappedServices) {
      const warnedAtMs = this.warnedServices.get(service);
      if (warnedAtMs !== undefined && nowMs - warnedAtMs < this.init.serviceEvictionWindowMs) continue;
      this.warnedServices.set(service, nowMs);
      this.log.warn(
        { service, held: count, maxRatio: this.init.serviceEvictionMaxRatio, windowMs: this.init.serviceEvictionWindowMs },
        'evictions held back: this service reached its eviction cap for the window',
      );
    }
  }

  get runMaxRatio(): number {
    return this.init.evictionMaxPerRunRatio;
  }

  get serviceMaxRatio(): number {
    return this.init.serviceEvictionMaxRatio;
  }

  status(nowMs: number): EvictionSafetyStatus {
    return {
      selfPreservation: {
        active: this.current.suspendOwnedExpiry,
        mode: this.selfPreservationMode,
        reason: this.selfReason,
        renewalsInWindow: this.renewals.count(nowMs),
        expectedRenewalsInWindow: Math.round(this.renewalFigures.expected * 10) / 10,
        thresholdRatio: this.init.renewalThresholdRatio,
        ownedInstances: this.renewalFigures.ownedInstances,
        windowMs: this.init.renewalWindowMs,
        warmUpUntilMs: this.init.startedAtMs + this.init.selfPreservationWarmUpMs,
        sinceMs: this.selfSinceMs,
      },
      partitionGuard: {
        active: this.current.holdDownOwners,
        mode: this.partitionGuardMode,
        reason: this.guardReason,
        downOwnedShare: Math.round(this.downOwnedShare * 1_000) / 1_000,
        ratio: this.init.partitionGuardRatio,
        sinceMs: this.guardSinceMs,
      },
      serviceCap: {
        maxRatio: this.init.serviceEvictionMaxRatio,
        windowMs: this.init.serviceEvictionWindowMs,
        servicesAtCap: [...this.warnedServices]
          .filter(([, atMs]) => nowMs - atMs < this.init.serviceEvictionWindowMs)
          .map(([service]) => service)
          .sort(),
      },
      runCap: { maxRatio: this.init.evictionMaxPerRunRatio },
      held: { ...this.held },
      heldTotal: { ...this.heldTotal },
    };
  }

  private evictionsInWindow(service: string, nowMs: number): number {
    const times = this.evictions.get(service);
    if (!times) return 0;
    const fresh = times.filter((atMs) => nowMs - atMs < this.init.serviceEvictionWindowMs);
    if (fresh.length === 0) this.evictions.delete(service);
    else this.evictions.set(service, fresh);
    return fresh.length;
  }
}
