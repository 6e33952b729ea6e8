/**
 * The names of the xDS resources of a service. `xds:///greeter` makes a gRPC client ask for
 * the Listener `greeter`: a service of the `default` namespace is named as it is; one of
 * another exposed namespace `ns` as `greeter.ns`. The Cluster and its ClusterLoadAssignment
 * carry the same name.
 */

export interface ServiceRef {
  namespace: string;
  service: string;
}

export const DEFAULT_NAMESPACE = 'default';

/** The resource name of a service (Listener, Cluster and ClusterLoadAssignment alike). */
export function resourceNameOf(namespace: string, service: string): string {
  return namespace === DEFAULT_NAMESPACE ? service : `${service}.${namespace}`;
}

/**
 * The service a resource name stands for, among the exposed namespaces; null when none.
 * A name ending in `.ns` for an exposed namespace `ns` other than `default` always means that
 * namespace (the longest such suffix wins), so a name's meaning depends on the configuration
 * only, never on which services exist now: a `default` service whose own name ends so is not
 * reachable through xDS (docs/xds.md).
 */
export function parseResourceName(name: string, namespaces: readonly string[]): ServiceRef | null {
  let best: ServiceRef | null = null;
  for (const namespace of namespaces) {
    if (namespace === DEFAULT_NAMESPACE || !name.endsWith(`.${namespace}`)) continue;
    const service = name.slice(0, name.length - namespace.length - 1);
    if (service !== '' && (best === null || namespace.length > best.namespace.length)) best = { namespace, service };
  }
  if (best) return best;
  return namespaces.includes(DEFAULT_NAMESPACE) && name !== '' ? { namespace: DEFAULT_NAMESPACE, service: name } : null;
}
