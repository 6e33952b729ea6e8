import type { RegistryReads } from '../app/reads.js';
import { KeptBuilds, sliceServices, type SlicedBuild } from '../http/namespace-slices.js';
import type { ChunkedBody } from '../http/send-chunks.js';

/**
 * `GET /v1/services`, every service of a namespace with its counts, built once per change and
 * shared by every reader (docs/api.md), as the Eureka full fetch is (src/eureka/shared-documents.ts),
 * in slices (src/http/namespace-slices.ts, shared with the dashboard's registrations).
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
export interface ServicesListing extends ChunkedBody, SlicedBuild {}

type Reads = Pick<RegistryReads, 'views' | 'leaseView' | 'countsOf'>;

export class ServicesListings {
  private readonly kept: KeptBuilds<ServicesListing>;

  constructor(private readonly reads: Reads) {
    this.kept = new KeptBuilds(reads, KEPT_LISTINGS_MAX);
  }

  /** How many listings are kept (for tests of the bound). */
  get keptCount(): number {
    return this.kept.keptCount;
  }

  /** The listing of `namespace` (one group's counts, given one): kept, or built once for every reader waiting. */
  listing(namespace: string, group: string | null): Promise<ServicesListing> {
    return this.kept.get(`${namespace}\n${group ?? ''}`, () => this.build(namespace, group));
  }

  /** `{"namespace":..,"revision":..,"services":[{"service":..,"instances":..,"up":..},..]}`, in slices. */
  private async build(namespace: string, group: string | null): Promise<ServicesListing> {
    const chunks: Buffer[] = [];
    let text = `{"namespace":${JSON.stringify(namespace)},"revision":${this.reads.views.revision},"services":[`;
    let listed = 0;
    const walked = await sliceServices(
      this.reads,
      namespace,
      (service, view) => {
        const counts = this.reads.countsOf(view, group);
        if (!counts || counts.instances === 0) return;
        text += `${listed > 0 ? ',' : ''}{"service":${JSON.stringify(service)},"instances":${counts.instances},"up":${counts.up}}`;
        listed += 1;
      },
      () => {
        chunks.push(Buffer.from(text));
        text = '';
      },
    );
    chunks.push(Buffer.from(`${text}]}`));
    return { ...walked, chunks, bytes: chunks.reduce((sum, chunk) => sum + chunk.length, 0) };
  }
}
