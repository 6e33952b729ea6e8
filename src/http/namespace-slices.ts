import type { RegistryReads } from '../app/reads.js';
import type { ServiceSummary } from '../registry/queries.js';
import { StampCombiner, stampHolds, type Stamp } from '../views/service-views.js';
import type { StableView } from '../views/stable-views.js';
import { readsBudget, sharedBuild, yieldToLoop, type SharedBuild } from './loop-budget.js';

/**
 * What the documents of a whole namespace share (`GET /v1/services`, src/native/services-listing.ts;
 * the dashboard's registrations, src/metrics/registrations-view.ts): each is built once per
 * change and kept for every reader, in slices that yield whenever the peer's reads have held
 * the loop for their budget (loop-budget.ts), from every service's stable view (kept until the
 * service changes). A kept document holds while the store's revision is the same and every
 * stable view it was built from is still what a fresh build would take (an owner's liveness,
 * the eviction guards and the lease ends that keep instances served: src/views/stable-views.ts).
 */

/** What a namespace's walk read: the revision it started at, and its views' stamp (undefined when it saw a change). */
export interface SlicedBuild {
  revision: number;
  /** Undefined when the build saw a change (it yields): such a document is answered once, never kept. */
  stamp: Stamp | undefined;
}

type Reads = Pick<RegistryReads, 'views' | 'leaseView'>;

/**
 * Visits every service of `namespace` with its stable view, yielding to the loop when the reads'
 * budget is spent (`beforeYield` first: a builder flushes what it has put together).
 */
export async function sliceServices(reads: Reads, namespace: string, visit: (service: string, view: StableView) => void, beforeYield?: () => void): Promise<SlicedBuild> {
  const { views } = reads;
  const revision = views.revision;
  let leases = reads.leaseView();
  const stamps = new StampCombiner();
  for (const service of views.servicesOf(namespace)) {
    if (readsBudget.spent()) {
      beforeYield?.();
      await yieldToLoop();
      leases = reads.leaseView();
    }
    const view = views.stable(namespace, service, leases);
    stamps.add(views.stableStamp(view));
    visit(service, view);
  }
  // Kept only when nothing changed while it was put together (a build that yields).
  return { revision, stamp: views.revision === revision ? stamps.result() : undefined };
}

/**
 * The services of `namespace` that serve at least one instance (of `group`, given one), with
 * their counts, as `listServices` counts them: from each service's stable view (its counts kept
 * with it until it changes), in slices (`sliceServices`). In one piece, a list of 200,000
 * services held the loop 394 ms warm and 3.3 s cold (the Nacos service list and metrics).
 */
export async function serviceSummaries(reads: Reads & Pick<RegistryReads, 'countsOf'>, namespace: string, group: string | null): Promise<ServiceSummary[]> {
  const out: ServiceSummary[] = [];
  await sliceServices(reads, namespace, (service, view) => {
    const kept = reads.countsOf(view, group);
    if (kept && kept.instances > 0) out.push({ service, instances: kept.instances, up: kept.up });
  });
  return out;
}

/**
 * Documents kept per key (a namespace, or a namespace and a filter), at most `keptMax`, the
 * oldest idle one out first (a client chooses the key); each built once for every reader
 * waiting, and kept while it holds.
 */
export class KeptBuilds<T extends SlicedBuild> {
  private readonly holders = new Map<string, SharedBuild<T>>();

  constructor(
    private readonly reads: Reads,
    private readonly keptMax: number,
  ) {}

  /** How many documents are kept (for tests of the bound). */
  get keptCount(): number {
    return this.holders.size;
  }

  /** The document of `key`: kept, or built once by `build` for every reader waiting. */
  get(key: string, build: () => Promise<T>): Promise<T> {
    let holder = this.holders.get(key);
    if (!holder) {
      // While every kept one is being built none goes, and the count passes `keptMax` for a
      // while: the next new key brings it back down (all the idle ones past the bound go).
      while (this.holders.size >= this.keptMax && this.forgetOldestIdle());
      this.holders.set(key, (holder = {}));
    }
    return sharedBuild(holder, build, (built) => this.holds(built));
  }

  /** Whether a kept document is what a fresh build would give now. */
  private holds(built: T): boolean {
    return built.stamp !== undefined && built.revision === this.reads.views.revision && stampHolds(built.stamp, this.reads.leaseView());
  }

  /** Forgets the oldest document not being built; false when every one is. */
  private forgetOldestIdle(): boolean {
    for (const [key, holder] of this.holders) {
      if (holder.building) continue;
      this.holders.delete(key);
      return true;
    }
    return false;
  }
}
