import type { InstanceStore } from './store.js';
import { groupOf, type StoredInstance } from './types.js';
import { toInstanceView, type InstanceView } from './view.js';
import { isServed, leaseState, type LeaseView } from './visibility.js';

/** A listing before its instances are turned into views: the stored entries, sorted by id. */
export interface ServiceEntryListing {
  namespace: string;
  service: string;
  /** Local revision of the service's last change; 0 for a service never seen. */
  revision: number;
  /**
   * True when the protect threshold applied: too few instances were healthy (UP with a live
   * lease), so every served instance is listed, whatever its status.
   */
  protected: boolean;
  entries: StoredInstance[];
}

export interface ServiceListing extends Omit<ServiceEntryListing, 'entries'> {
  instances: InstanceView[];
}

export interface ServiceSummary {
  service: string;
  /** Instances with a live lease, whatever their status. */
  instances: number;
  /** Of those, the ones whose status is UP. */
  up: number;
}

/** Instances that readers may see: not deleted, not hidden, lease live; of one group when `group` is given. */
export function liveInstances(entries: Iterable<StoredInstance>, view: LeaseView, group: string | null = null): StoredInstance[] {
  const out: StoredInstance[] = [];
  for (const entry of entries) if (isServed(entry, view) && (group === null || groupOf(entry.record.data) === group)) out.push(entry);
  return out;
}

/**
 * Is the protect threshold crossed (Nacos's idea)? When the share of served instances that
 * are healthy (UP, lease live) falls below `thresholdRatio`, sending all traffic to the few
 * left would overload them too, so readers get every served instance instead. 0 is off.
 */
export function isProtected(served: readonly StoredInstance[], view: LeaseView, thresholdRatio: number): boolean {
  if (thresholdRatio <= 0 || served.length === 0) return false;
  const healthy = served.filter((entry) => entry.record.data.status === 'UP' && leaseState(entry, view) === 'live').length;
  return healthy / served.length < thresholdRatio;
}

/**
 * The instances of one service, sorted by id. By default only UP instances that are served
 * (lease live, or held by an eviction guard); `allStatuses` adds the ones with another status,
 * and so does the protect threshold when it applies. An unknown service is an empty list.
 * With `group`, only that group's instances (the protect threshold then judges the group).
 */
export function listService(...args: Parameters<typeof listServiceEntries>): ServiceListing {
  const { entries, ...listing } = listServiceEntries(...args);
  const view = args[3];
  return { ...listing, instances: entries.map((entry) => toInstanceView(entry, view)) };
}

/** `listService` without the views: the entries to list, in the same order (the HTTP route serializes them itself). */
export function listServiceEntries(
  store: InstanceStore,
  namespace: string,
  service: string,
  view: LeaseView,
  allStatuses: boolean,
  protectThresholdRatio = 0,
  group: string | null = null,
): ServiceEntryListing {
  const entries = store.getService(namespace, service);
  const live = entries ? liveInstances(entries.instances.values(), view, group) : [];
  const protectedNow = isProtected(live, view, protectThresholdRatio);
  const shown = allStatuses || protectedNow ? live : live.filter((entry) => entry.record.data.status === 'UP');
  return {
    namespace,
    service,
    revision: entries?.revision ?? 0,
    protected: protectedNow,
    entries: shown.sort((a, b) => (a.record.instanceId < b.record.instanceId ? -1 : a.record.instanceId > b.record.instanceId ? 1 : 0)),
  };
}

/** Every service of a namespace that has at least one live instance (of `group`, when given), sorted by name. */
export function listServices(store: InstanceStore, namespace: string, view: LeaseView, group: string | null = null): ServiceSummary[] {
  const out: ServiceSummary[] = [];
  for (const entries of store.allServices()) {
    if (entries.namespace !== namespace) continue;
    const live = liveInstances(entries.instances.values(), view, group);
    if (live.length === 0) continue;
    out.push({
      service: entries.service,
      instances: live.length,
      up: live.filter((entry) => entry.record.data.status === 'UP').length,
    });
  }
  return out.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
}

/**
 * Orders instances nearest first for a reader in `nearZone`: same zone, then zones of the
 * same region, then the rest; by instance id within each group. `regionOfZone` maps a zone to
 * its region (from the peers' configuration); unknown zones are "the rest".
 */
export function orderByProximity<T extends { zone: string; instanceId: string }>(
  instances: readonly T[],
  nearZone: string,
  regionOfZone: (zone: string) => string | undefined,
): T[] {
  const nearRegion = regionOfZone(nearZone);
  const rank = (instance: T): number => {
    if (instance.zone === nearZone) return 0;
    const region = regionOfZone(instance.zone);
    return region !== undefined && region === nearRegion ? 1 : 2;
  };
  return instances
    .map((instance) => ({ instance, rank: rank(instance) }))
    .sort((a, b) => a.rank - b.rank || (a.instance.instanceId < b.instance.instanceId ? -1 : a.instance.instanceId > b.instance.instanceId ? 1 : 0))
    .map((item) => item.instance);
}
