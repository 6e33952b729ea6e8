import type { RegistryReads } from '../app/reads.js';
import { serviceSummaries } from '../http/namespace-slices.js';
import { buildNacosHosts, NACOS_HOSTS_ENCODING, NacosHosts } from './documents.js';

/**
 * The Nacos adapter's reads, from the read layer: a service's hosts as the shared per-change
 * encoding of its stable view (one build per change, whatever the number of lists and
 * pushes), and the counts `/operator/metrics` shows.
 */
export class NacosReads {
  constructor(
    private readonly reads: Pick<RegistryReads, 'views' | 'store' | 'leaseView' | 'countsOf'>,
    private readonly heartbeatIntervalMs: () => number,
    private readonly namespaces: readonly string[],
  ) {}

  hostsOf(namespace: string, service: string): NacosHosts {
    const { views, store } = this.reads;
    // A service with no record gets no view: the read layer keeps a view per name asked, and
    // clients may list any name (a subscriber waits for a service before it exists).
    if (store.getService(namespace, service) === undefined) return new NacosHosts(0, 0, new Map());
    return views.stableEncoding(views.stable(namespace, service), NACOS_HOSTS_ENCODING, (view) => buildNacosHosts(view, this.heartbeatIntervalMs()));
  }

  /** Services and instances served in this listener's namespaces (counted in slices: `serviceSummaries`). */
  async counts(): Promise<{ serviceCount: number; instanceCount: number }> {
    let serviceCount = 0;
    let instanceCount = 0;
    for (const namespace of this.namespaces) {
      for (const summary of await serviceSummaries(this.reads, namespace, null)) {
        serviceCount += 1;
        instanceCount += summary.instances;
      }
    }
    return { serviceCount, instanceCount };
  }
}
