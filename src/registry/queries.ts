import type { InstanceStore } from './store.js';
import type { StoredInstance } from './types.js';
import { toInstanceView, type InstanceView } from './view.js';
import { isLeaseLive, type LeaseView } from './visibility.js';

export interface ServiceListing {
  namespace: string;
  service: string;
  /** Local revision of the service's last change; 0 for a service never seen. */
  revision: number;
  instances: InstanceView[];
}

export interface ServiceSummary {
  service: string;
  /** Instances with a live lease, whatever their status. */
  instances: number;
  /** Of those, the ones whose status is UP. */
  up: number;
}

/** Instances that readers may see: not deleted, not hidden, lease live. */
export function liveInstances(entries: Iterable<StoredInstance>, view: LeaseView): StoredInstance[] {
  const out: StoredInstance[] = [];
  for (const entry of entries) if (isLeaseLive(entry, view)) out.push(entry);
  return out;
}

/**
 * The instances of one service, sorted by id. By default only UP instances with a live lease;
 * `allStatuses` adds the ones with another status. An unknown service is an empty list.
 */
export function listService(
  store: InstanceStore,
  namespace: string,
  service: string,
  view: LeaseView,
  allStatuses: boolean,
): ServiceListing {
  const entries = store.getService(namespace, service);
  const live = entries ? liveInstances(entries.instances.values(), view) : [];
  const shown = allStatuses ? live : live.filter((entry) => entry.record.data.status === 'UP');
  return {
    namespace,
    service,
    revision: entries?.revision ?? 0,
    instances: shown
      .map((entry) => toInstanceView(entry, view))
      .sort((a, b) => (a.instanceId < b.instanceId ? -1 : a.instanceId > b.instanceId ? 1 : 0)),
  };
}

/** Every service of a namespace that has at least one live instance, sorted by name. */
export function listServices(store: InstanceStore, namespace: string, view: LeaseView): ServiceSummary[] {
  const out: ServiceSummary[] = [];
  for (const entries of store.allServices()) {
    if (entries.namespace !== namespace) continue;
    const live = liveInstances(entries.instances.values(), view);
    if (live.length === 0) continue;
    out.push({
      service: entries.service,
      instances: live.length,
      up: live.filter((entry) => entry.record.data.status === 'UP').length,
    });
  }
  return out.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
}
