import { listServices, type ServiceSummary } from '../registry/queries.js';
import type { Registry } from '../registry/registry.js';
import type { InstanceStore } from '../registry/store.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import type { LeaseView } from '../registry/visibility.js';
import type { ServiceViews } from '../views/service-views.js';
import type { WatchHub } from '../watch/hub.js';

/** The store as readers see it: lookups, the service maps and the change feed, no writes. */
export type StoreReader = Pick<InstanceStore, 'revision' | 'get' | 'getService' | 'allServices' | 'onChange' | 'onPurge'>;

/**
 * Every read a protocol makes (instances, listings, the read layer's views, watches), over the
 * registry's state; nothing here writes.
 */
export class RegistryReads {
  constructor(
    private readonly components: {
      registry: Pick<Registry, 'store' | 'find' | 'leaseView'>;
      views: ServiceViews;
      watch: WatchHub;
      regionOfZone: (zone: string) => string | undefined;
    },
  ) {}

  get store(): StoreReader {
    return this.components.registry.store;
  }

  /** How leases look now (the clock and the owners' liveness), for visibility decisions. */
  leaseView(): LeaseView {
    return this.components.registry.leaseView();
  }

  /** An instance that is not cancelled (it may be hidden or its lease run out: the caller decides). */
  find(key: InstanceKey): StoredInstance | undefined {
    return this.components.registry.find(key);
  }

  /** The services of a namespace with their instance counts (one group's only, given one). */
  services(namespace: string, group: string | null): ServiceSummary[] {
    return listServices(this.components.registry.store, namespace, this.leaseView(), group);
  }

  get views(): ServiceViews {
    return this.components.views;
  }

  get watch(): WatchHub {
    return this.components.watch;
  }

  regionOfZone(zone: string): string | undefined {
    return this.components.regionOfZone(zone);
  }
}
