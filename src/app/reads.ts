import type { Registry } from '../registry/registry.js';
import type { InstanceStore } from '../registry/store.js';
import { groupOf, type InstanceKey, type StoredInstance } from '../registry/types.js';
import type { LeaseView } from '../registry/visibility.js';
import type { ServiceViews, StableView } from '../views/service-views.js';
import type { WatchHub } from '../watch/hub.js';

/** The store as readers see it: lookups, the service maps and the change feed, no writes. */
export type StoreReader = Pick<InstanceStore, 'revision' | 'get' | 'getService' | 'servicesIn' | 'allServices' | 'onChange' | 'onPurge'>;

/** The name of the counts kept with each stable view, and how they are made. */
const SERVICE_COUNTS = 'service-counts';

export interface Counts {
  instances: number;
  up: number;
}

function countServed(view: StableView): { all: Counts; byGroup: Map<string, Counts> } {
  const all = { instances: 0, up: 0 };
  const byGroup = new Map<string, Counts>();
  for (const entry of view.servedInAnyOrder) {
    const group = groupOf(entry.record.data);
    let counts = byGroup.get(group);
    if (!counts) byGroup.set(group, (counts = { instances: 0, up: 0 }));
    const up = entry.record.data.status === 'UP' ? 1 : 0;
    all.instances += 1;
    all.up += up;
    counts.instances += 1;
    counts.up += up;
  }
  return { all, byGroup };
}

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

  /** A service's served instances and UP ones (one group's, given one), kept with its stable view until it changes. */
  countsOf(view: StableView, group: string | null): Counts | undefined {
    const counts = this.components.views.stableEncoding(view, SERVICE_COUNTS, countServed);
    return group === null ? counts.all : counts.byGroup.get(group);
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
