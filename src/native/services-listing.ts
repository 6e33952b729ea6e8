import type { RegistryReads } from '../app/reads.js';
import { readsBudget, sharedBuild, yieldToLoop, type SharedBuild } from '../http/loop-budget.js';
import type { ChunkedBody } from '../http/send-chunks.js';
import { combinedStamp, stampHolds, type Stamp } from '../views/service-views.js';

/**
 * `GET /v1/services`, every service of a namespace with its counts, built once per change and
 * shared by every reader (docs/api.md), as the Eureka full fetch is (src/eureka/shared-documents.ts).
 *
 * Built per request, a listing of 5,015 services held the event loop for every reader: with 4
 * readers fetching back to back, `/healthz` waited 108 ms at p50 (issue 33.15; measured with
 * scripts/services-listing-load.ts). Here the document is built in slices that yield whenever
 * the peer's reads have held the loop for their budget (src/http/loop-budget.ts), each service's
 * counts come from its stable view (kept until the service changes), readers arriving during a
 * build wait for that one build, and the bytes are kept for the readers that follow while
 * nothing they were built from changed: the store's revision is the same, and every stable view
 * taken is still what a fresh build would take (an owner's liveness, the eviction guards and the
 * lease ends that keep instances served, see src/views/stable-views.ts). Nothing lags.
 */

/** Listings kept at most (a namespace, or a namespace and one group filter, each): the oldest go first. */
export const KEPT_LISTINGS_MAX = 32;

/** One listing's bytes, the revision they show, and what they were built from. */
export interface ServicesListing extends ChunkedBody {
  revision: number;
  /** Undefined when the build saw a change (it yields): such a listing is answered once, never kept. */
  stamp: Stamp | undefined;
}

type Reads = Pick<RegistryReads, 'views' | 'leaseView' | 'countsOf'>;

export class ServicesListings {
  private readonly holders = new Map<string, SharedBuild<ServicesListing>>();

  constructor(private readonly reads: Reads) {}

  /** How many listings are kept (for tests of the bound). */
  get keptCount(): number {
    return this.holders.size;
  }

  /** The listing of `namespace` (one group's counts, given one): kept, or built once for every reader waiting. */
  listing(namespace: string, group: string | null): Promise<ServicesListing> {
    const key = `${namespace}\n${group ?? ''}`;
    let holder = this.holders.get(key);
    if (!holder) {
      // A client chooses the namespace and group: the number kept is bounded, oldest out first.
      if (this.holders.size >= KEPT_LISTINGS_MAX) this.forgetOldestIdle();
      this.holders.set(key, (holder = {}));
    }
    return sharedBuild(holder, () => this.build(namespace, group), (built) => this.holds(built));
  }

  /** Whether a kept listing is what a fresh build would give now. */
  private holds(built: ServicesListing): boolean {
    return built.stamp !== undefined && built.revision === this.reads.views.revision && stampHolds(built.stamp, this.reads.leaseView());
  }

  private forgetOldestIdle(): void {
    for (const [key, holder] of this.holders) {
      if (holder.building) continue;
      this.holders.delete(key);
      return;
    }
  }

  /** `{"namespace":..,"revision":..,"services":[{"service":..,"instances":..,"up":..},..]}`, in slices. */
  private async build(namespace: string, group: string | null): Promise<ServicesListing> {
    const { views } = this.reads;
    const revision = views.revision;
    let leases = this.reads.leaseView();
    const chunks: Buffer[] = [];
    const stamps: (Stamp | undefined)[] = [];
    let text = `{"namespace":${JSON.stringify(namespace)},"revision":${revision},"services":[`;
    let listed = 0;
    for (const service of views.servicesOf(namespace)) {
      if (readsBudget.spent()) {
        chunks.push(Buffer.from(text));
        text = '';
        await yieldToLoop();
        leases = this.reads.leaseView();
      }
      const view = views.stable(namespace, service, leases);
      stamps.push(views.stableStamp(view));
      const counts = this.reads.countsOf(view, group);
      if (!counts || counts.instances === 0) continue;
      text += `${listed > 0 ? ',' : ''}{"service":${JSON.stringify(service)},"instances":${counts.instances},"up":${counts.up}}`;
      listed += 1;
    }
    chunks.push(Buffer.from(`${text}]}`));
    // Kept only when nothing changed while it was put together (a build that yields).
    const stamp = views.revision === revision ? combinedStamp(stamps) : undefined;
    return { revision, stamp, chunks, bytes: chunks.reduce((sum, chunk) => sum + chunk.length, 0) };
  }
}
