import type { InstanceStore } from '../registry/store.js';
import type { StoredInstance } from '../registry/types.js';
import { isServed, type LeaseView } from '../registry/visibility.js';

/**
 * Instances a scrape reads between two yields to the event loop when it counts the registry
 * (served instances by namespace and status, services, tombstones). Counted in one piece, a
 * scrape of 1,000,000 instances held a heartbeat up to 152 ms (bench/loop-stalls.ts, base
 * build, shared 2-core box); in slices, 6.5 ms in the same run.
 */
export const SCRAPE_SLICE_INSTANCES = 5_000;

/** What one scrape reads from the registry, gathered once and shared by every series. */
export interface RegistryFigures {
  nowMs: number;
  /** `namespace` -> status -> served instances. */
  instances: Map<string, Map<string, number>>;
  /** `namespace` -> services with at least one served instance. */
  services: Map<string, number>;
  tombstones: number;
  live: number;
}

type Store = Pick<InstanceStore, 'allServices'>;

/** Adds one instance to the figures; whether it is served. */
function count(figures: RegistryFigures, entry: StoredInstance, view: LeaseView, namespace: string): boolean {
  if (entry.record.deleted !== null) {
    figures.tombstones += 1;
    return false;
  }
  figures.live += 1;
  if (!isServed(entry, view)) return false;
  let byStatus = figures.instances.get(namespace);
  if (!byStatus) figures.instances.set(namespace, (byStatus = new Map()));
  const { status } = entry.record.data;
  byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  return true;
}

function addService(figures: RegistryFigures, namespace: string, served: number): void {
  if (served > 0) figures.services.set(namespace, (figures.services.get(namespace) ?? 0) + 1);
}

/** Served instances in all, every namespace and status. */
export function servedCount(figures: RegistryFigures): number {
  let served = 0;
  for (const byStatus of figures.instances.values()) for (const count of byStatus.values()) served += count;
  return served;
}

const empty = (view: LeaseView): RegistryFigures => ({ nowMs: view.nowMs, instances: new Map(), services: new Map(), tombstones: 0, live: 0 });

/** The figures in one piece (a collect outside `NodeMetrics.scrape`, which gathers them in slices first). */
export function gatherFigures(store: Store, view: LeaseView): RegistryFigures {
  const figures = empty(view);
  for (const entries of store.allServices()) {
    let served = 0;
    for (const entry of entries.instances.values()) if (count(figures, entry, view, entries.namespace)) served += 1;
    addService(figures, entries.namespace, served);
  }
  return figures;
}

/**
 * The same figures in slices of `sliceInstances`, yielding between them, as of one lease view
 * (the scrape's time). A write made while the count is suspended is counted if its instance
 * was not reached yet: the figures are a scrape's, each exact within the writes of a few ms.
 */
export async function gatherFiguresSliced(
  store: Store,
  view: LeaseView,
  yieldTurn: () => Promise<void>,
  sliceInstances = SCRAPE_SLICE_INSTANCES,
): Promise<RegistryFigures> {
  const figures = empty(view);
  let inSlice = 0;
  for (const entries of store.allServices()) {
    let served = 0;
    for (const entry of entries.instances.values()) {
      if (inSlice === sliceInstances) {
        await yieldTurn();
        inSlice = 0;
      }
      inSlice += 1;
      if (count(figures, entry, view, entries.namespace)) served += 1;
    }
    addService(figures, entries.namespace, served);
  }
  return figures;
}
