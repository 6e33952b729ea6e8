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
 * Sorts eviction candidates (given in random order, one at a time: the reaper plans a large run
 * over several turns of the event loop) into those evicted now and those held by the
 * per-service cap or the per-run cap.
 */
export class EvictionPlanner<T> {
  readonly plan: EvictionPlan<T> = { evict: [], heldByService: [], cappedByService: new Map(), heldByRun: [] };
  /** What each service may still lose, from its budget, as candidates are taken. */
  private readonly left = new Map<string, number>();

  constructor(
    private readonly serviceOf: (candidate: T) => string,
    private readonly budgets: ReadonlyMap<string, ServiceBudget>,
    private readonly policy: BudgetPolicy,
  ) {}

  add(candidate: T): void {
    const { plan, left } = this;
    const service = this.serviceOf(candidate);
    let allowance = left.get(service);
    if (allowance === undefined) allowance = serviceAllowance(this.budgets.get(service) ?? { size: 1, evictedInWindow: 0 }, this.policy.serviceMaxRatio);
    if (plan.evict.length >= this.policy.runMax) {
      plan.heldByRun.push(candidate);
    } else if (allowance <= 0) {
      plan.heldByService.push(candidate);
      plan.cappedByService.set(service, (plan.cappedByService.get(service) ?? 0) + 1);
    } else {
      plan.evict.push(candidate);
      allowance -= 1;
    }
    left.set(service, allowance);
  }
}

/** `EvictionPlanner` over a whole list at once. Pure. */
export function planEvictions<T>(
  candidates: readonly T[],
  serviceOf: (candidate: T) => string,
  budgets: ReadonlyMap<string, ServiceBudget>,
  policy: BudgetPolicy,
): EvictionPlan<T> {
  const planner = new EvictionPlanner(serviceOf, budgets, policy);
  for (const candidate of candidates) planner.add(candidate);
  return planner.plan;
}

/** The per-run cap: a share of the served registry, at least one. */
export function runCap(servedInstances: number, maxPerRunRatio: number): number {
  if (maxPerRunRatio >= 1) return Number.POSITIVE_INFINITY;
  return Math.max(1, Math.floor(maxPerRunRatio * servedInstances));
}
