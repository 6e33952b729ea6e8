import type { XdsLbPolicy } from './declaration.js';
import type { ServiceViews } from '../views/service-views.js';
import { parseResourceName, resourceNameOf, type ServiceRef } from './names.js';
import type { AnyMessage, XdsProtos } from './protos.js';
import { buildServiceResources, type ResourceSettings, type ServiceResources } from './resources.js';

/** The resource kinds a service has, one per xDS type the registry serves. */
export type ResourceKind = 'listener' | 'cluster' | 'endpoints';

/** One encoded resource and its version: a number that changes only when its bytes do. */
export interface VersionedResource {
  any: AnyMessage;
  version: number;
}

interface Entry {
  source: ServiceResources;
  versions: Record<ResourceKind, number>;
}

export interface CatalogComponents {
  views: ServiceViews;
  protos: XdsProtos;
  /** Told once per build when instances had to be left out (a host that is no IP address...). */
  onSkipped?: (name: string, skipped: ServiceResources['skipped']) => void;
}

/**
 * The resources of every exposed service, as ADS streams read them. Each service's resources
 * are built once per view change (`views.encoded(ns, svc, 'xds', build)`) and shared by
 * every stream; their versions move only when the encoded bytes change, so a view rebuilt
 * for its lease countdowns alone pushes nothing.
 */
export class XdsCatalog {
  private readonly entries = new Map<string, Entry>();
  private pushMemo: Map<string, { namespace: string; resource: VersionedResource } | null> | null = null;
  private versionCounter = 0;

  constructor(
    private readonly components: CatalogComponents,
    private readonly init: { namespaces: readonly string[] },
  ) {}

  /** The service a resource name stands for, when it is in an exposed namespace. */
  refOf(name: string): ServiceRef | null {
    return parseResourceName(name, this.init.namespaces);
  }

  /** Whether changes of this namespace matter here. */
  exposes(namespace: string): boolean {
    return this.init.namespaces.includes(namespace);
  }

  /**
   * A resource of the named service as built for clients of `lbPolicy`; null when the service
   * has no served instance (an absent resource, which state-of-the-world xDS shows by leaving
   * it out). Each policy's resources are built once per view change, on first use.
   */
  get(name: string, kind: ResourceKind, lbPolicy: XdsLbPolicy): VersionedResource | null {
    const entry = this.entry(name, lbPolicy);
    return entry ? { any: entry.source[kind], version: entry.versions[kind] } : null;
  }

  /**
   * Runs one push: within it, each (name, type, policy) is looked up once and the answer
   * shared by every stream that asks (1,000 streams of one service asked the views 1,000
   * times per change; the views' answer cannot change within a push, which runs in one turn).
   */
  push(run: () => void): void {
    this.pushMemo = new Map();
    try {
      run();
    } finally {
      this.pushMemo = null;
    }
  }

  /** A resource and its service's namespace, for a stream that checks it may see it; memoized within a push. */
  lookup(name: string, kind: ResourceKind, lbPolicy: XdsLbPolicy): { namespace: string; resource: VersionedResource } | null {
    const memo = this.pushMemo;
    const key = memo === null ? '' : `${lbPolicy}\n${kind}\n${name}`;
    if (memo?.has(key)) return memo.get(key)!;
    const ref = this.refOf(name);
    const resource = ref === null ? null : this.get(name, kind, lbPolicy);
    const found = ref === null || resource === null ? null : { namespace: ref.namespace, resource };
    memo?.set(key, found);
    return found;
  }

  /**
   * The names of every exposed service with a served instance (what a wildcard subscription
   * gets), of the namespaces `visible` lets through.
   */
  names(visible: (namespace: string) => boolean = () => true): string[] {
    const out: string[] = [];
    for (const namespace of this.init.namespaces) {
      if (!visible(namespace)) continue;
      for (const service of this.components.views.servicesOf(namespace)) {
        const name = resourceNameOf(namespace, service);
        const ref = this.refOf(name);
        // A default-namespace name that reads as another namespace's is not reachable (names.ts).
        if (ref?.namespace !== namespace || ref.service !== service) continue;
        if (this.components.views.get(namespace, service).served.length > 0) out.push(name);
      }
    }
    return out;
  }

  private entry(name: string, lbPolicy: XdsLbPolicy): Entry | null {
    const ref = this.refOf(name);
    const key = `${lbPolicy}\n${name}`;
    // Checked before `get`, which would keep an (empty) view for every name a client makes up.
    const known = ref !== null && this.components.views.revisionOf(ref.namespace, ref.service) > 0;
    const view = known ? this.components.views.get(ref.namespace, ref.service) : null;
    if (!ref || !view || view.served.length === 0) {
      this.entries.delete(key);
      return null;
    }
    const settings: ResourceSettings = { lbPolicy };
    const source = this.components.views.encoding(view, `xds:${lbPolicy}`, (current) => {
      const built = buildServiceResources(current, this.components.protos, settings);
      if (built.skipped.notAnIp + built.skipped.duplicateAddress > 0) this.components.onSkipped?.(built.name, built.skipped);
      return built;
    });
    const previous = this.entries.get(key);
    if (previous?.source === source) return previous;
    const versionOf = (kind: ResourceKind) =>
      previous && previous.source[kind].value.equals(source[kind].value) ? previous.versions[kind] : ++this.versionCounter;
    const entry: Entry = { source, versions: { listener: versionOf('listener'), cluster: versionOf('cluster'), endpoints: versionOf('endpoints') } };
    this.entries.set(key, entry);
    return entry;
  }
}
