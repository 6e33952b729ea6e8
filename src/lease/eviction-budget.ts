/** What one service may still lose in the current window. */
export interface ServiceBudget {
  /** Instances that count toward the cap: served now plus evicted within the window. */
  size: number;
  evictedInWindow: number;
}

export interface BudgetPolicy {
  /** Most of one service's instances evicted within the window (1 = no cap). */
  serviceMaxRatio: number;
  /** Most evictions in one reaper run. */
  runMax: number;
}

export interface EvictionPlan<T> {
  evict: T[];
  /** Kept because their service reached its cap for the window. */
  heldByService: T[];
  /** How many of `heldByService` each service has (what the guard's status shows per service). */
  cappedByService: Map<string, number>;
  /** Kept because this run reached its cap; the next run takes them. */
  heldByRun: T[];
}

/**
 * How many instances of a service may be evicted in one window: a share of its size, but
 * always at least one, so that a small service's dead instance is still evicted (one per
 * window) and a cap of 30% of 2 instances is not zero.
 */
export function serviceAllowance(budget: ServiceBudget, serviceMaxRatio: number): number {
  if (serviceMaxRatio >= 1) return Number.POSITIVE_INFINITY;
  return Math.max(1, Math.floor(serviceMaxRatio * budget.size)) - budget.evictedInWindow;
}

/**
 * Splits eviction candidates (already in random order) into those evicted now and those held
 * by the per-service cap or the per-run cap. Pure.
 */
export function planEvictions<T>(
  candidates: readonly T[],
  serviceOf: (candidate: T) => string,
  budgets: ReadonlyMap<string, ServiceBudget>,
  policy: BudgetPolicy,
): EvictionPlan<T> {
  const plan: EvictionPlan<T> = { evict: [], heldByService: [], cappedByService: new Map(), heldByRun: [] };
  const left = new Map<string, number>();
  for (const candidate of candidates) {
    const service = serviceOf(candidate);
    if (!left.has(service)) {
      const budget = budgets.get(service) ?? { size: 1, evictedInWindow: 0 };
      left.set(service, serviceAllowance(budget, policy.serviceMaxRatio));
    }
    if (plan.evict.length >= policy.runMax) {
      plan.heldByRun.push(candidate);
    } else if ((left.get(service) ?? 0) <= 0) {
      plan.heldByService.push(candidate);
      plan.cappedByService.set(service, (plan.cappedByService.get(service) ?? 0) + 1);
    } else {
      plan.evict.push(candidate);
      left.set(service, (left.get(service) ?? 0) - 1);
    }
  }
  return plan;
}

/** The per-run cap: a share of the served registry, at least one. */
export function runCap(servedInstances: number, maxPerRunRatio: number): number {
  if (maxPerRunRatio >= 1) return Number.POSITIVE_INFINITY;
  return Math.max(1, Math.floor(maxPerRunRatio * servedInstances));
}
