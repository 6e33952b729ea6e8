import type { LeaseView } from '../registry/visibility.js';
import type { StoredInstance } from '../registry/types.js';
import type { ServiceViews } from '../views/service-views.js';
import { byId, vipApplications, vipMatcher, type EurekaApp } from './documents.js';
import { appNameOf, type EurekaApplicationsJson, type ViewDefaults } from './instance-view.js';

/**
 * Served instances looked at between two yields to the event loop when a VIP read goes over the
 * registry. Any instance of any service may carry the VIP address, so the read looks at them
 * all: in one piece, that is a turn of the event loop proportional to the registry, which
 * every heartbeat arriving meanwhile waits for.
 */
export const VIP_SLICE_INSTANCES = 5_000;

export interface VipRead {
  views: ServiceViews;
  namespace: string;
  leaseView: () => LeaseView;
  defaults: ViewDefaults;
  /** Lets the event loop run between two slices (setImmediate in the peer, counted in tests). */
  yieldTurn: () => Promise<void>;
  sliceInstances?: number;
}

/**
 * `GET /eureka/vips/{vip}` and `/svips/{svip}` in slices, from the read layer's stable views
 * (each service's served instances, as the full fetch reads them): the document `vipDocument`
 * builds in one pass, apps sorted by name and their instances by id. Each service's view is
 * taken whole (a service's served list never changes under the read); a service changed while
 * the read is suspended is seen as it was before or after the change, as if read a moment
 * earlier or later.
 */
export async function vipDocumentSliced(read: VipRead, vip: string, secure: boolean): Promise<{ applications: EurekaApplicationsJson }> {
  const matches = vipMatcher(vip, secure);
  const sliceInstances = Math.max(1, read.sliceInstances ?? VIP_SLICE_INSTANCES);
  const byApp = new Map<string, StoredInstance[]>();
  let leases = read.leaseView();
  let inSlice = 0;
  for (const service of read.views.servicesOf(read.namespace)) {
    const { served } = read.views.stable(read.namespace, service, leases);
    for (const entry of served) {
      if (inSlice === sliceInstances) {
        await read.yieldTurn();
        leases = read.leaseView();
        inSlice = 0;
      }
      inSlice += 1;
      if (!matches(entry)) continue;
      const name = appNameOf(service);
      let list = byApp.get(name);
      if (!list) byApp.set(name, (list = []));
      list.push(entry);
    }
  }
  const apps: EurekaApp[] = [...byApp.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, instances]) => ({ name, instances: instances.sort(byId) }));
  return vipApplications(apps, read.defaults);
}
