import type { ServiceViews } from '../views/service-views.js';

/**
 * The services of the served namespaces by lower-cased name: DNS names are case-insensitive
 * (RFC 4343) while the store keeps a service under the name it was first registered with.
 * Filled from the read layer at start and kept up to date from its change feed, so a query
 * costs two map lookups. Names are never dropped: a service without instances answers NXDOMAIN
 * from its (empty) view.
 */
export class ServiceIndex {
  private readonly byNamespace = new Map<string, Map<string, string[]>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly views: ServiceViews,
    namespaces: readonly string[],
  ) {
    for (const namespace of namespaces) {
      this.byNamespace.set(namespace, new Map());
      for (const service of views.servicesOf(namespace)) this.add(namespace, service);
    }
    this.unsubscribe = views.onChange((change) => this.add(change.namespace, change.service));
  }

  /**
   * The stored names of a service (lower-cased `service`), most often one; several only while
   * the store still keeps names that differ in case apart.
   */
  namesOf(namespace: string, service: string): readonly string[] {
    return this.byNamespace.get(namespace)?.get(service) ?? [];
  }

  close(): void {
    this.unsubscribe();
  }

  private add(namespace: string, service: string): void {
    const services = this.byNamespace.get(namespace);
    if (!services) return;
    const key = service.toLowerCase();
    const names = services.get(key);
    if (!names) services.set(key, [service]);
    else if (!names.includes(service)) names.push(service);
  }
}
