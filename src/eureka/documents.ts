import { eurekaOf } from './attributes.js';
import type { StoreReader } from '../app/reads.js';
import type { ServiceEntries } from '../registry/store.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import { isServed, type LeaseView } from '../registry/visibility.js';
import {
  appNameOf,
  reconcileHashCode,
  toEurekaInstance,
  type ActionType,
  type EurekaApplicationJson,
  type EurekaApplicationsJson,
  type EurekaInstanceJson,
  type ViewDefaults,
} from './instance-view.js';
import { eurekaInstanceJson } from './instance-json.js';
import type { RecentChange } from './recent-changes.js';
import type { TurnBudget } from './turn-budget.js';

/**
 * The Eureka view of the store: which instances an app holds, and the documents the read
 * routes answer. Eureka apps are the services of one namespace (`security.eurekaNamespace`,
 * `default` unless configured), upper-cased, so `orders` and `ORDERS` (registered through
 * `/v1` and through Eureka) are one app. Reads see
 * live instances of every status (clients filter UP themselves), as Eureka's do.
 *
 * The document functions here (`registryDocument`, `appDocument`, `vipDocument`,
 * `deltaDocument`) build each answer in one synchronous pass over the store: they are the
 * reference the tests hold the served forms to. The routes serve the same bytes built in slices
 * that yield to the event loop (shared-documents.ts, delta-document.ts), since
 * one pass over 1,000,000 instances holds every heartbeat for seconds.
 */

export interface ReadContext {
  store: StoreReader;
  /** The namespace the Eureka API serves. */
  namespace: string;
  view: LeaseView;
  defaults: ViewDefaults;
}

export interface EurekaApp {
  name: string;
  instances: StoredInstance[];
}

export const byId = (a: StoredInstance, b: StoredInstance) =>
  a.record.instanceId < b.record.instanceId ? -1 : a.record.instanceId > b.record.instanceId ? 1 : 0;

/**
 * The services of the Eureka namespace that make up `app` (upper-cased name): at most one, the
 * service of that name in any case, found in one lookup. The store holds one service per name
 * lower-cased (`serviceIdentity`), and every service name is ASCII, whatever brought it (the
 * name rule of validate.ts is applied by the native, Eureka, Consul and Nacos APIs and to every
 * replicated record: replication/wire.ts); for ASCII, upper-casing two names gives the same app
 * exactly when lower-casing them gives the same service. So `orders`, `Orders` and `ORDERS`
 * (registered through /v1 and through Eureka) are one service and one app.
 */
export function servicesOfApp(store: StoreReader, namespace: string, app: string): ServiceEntries[] {
  const entries = store.getService(namespace, app);
  return entries && appNameOf(entries.service) === app ? [entries] : [];
}

/** Every app with at least one live instance, sorted by name; instances sorted by id. */
export function liveApps(store: StoreReader, namespace: string, view: LeaseView, app?: string): EurekaApp[] {
  const apps = new Map<string, StoredInstance[]>();
  const services = app === undefined ? store.allServices() : servicesOfApp(store, namespace, app);
  for (const entries of services) {
    if (entries.namespace !== namespace) continue;
    const name = appNameOf(entries.service);
    for (const entry of entries.instances.values()) {
      if (!isServed(entry, view)) continue;
      let list = apps.get(name);
      if (!list) apps.set(name, (list = []));
      list.push(entry);
    }
  }
  return [...apps.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, instances]) => ({ name, instances: instances.sort(byId) }));
}

/**
 * The instance `id` of `app`, deleted ones excluded (hidden ones included, as the registry's
 * writes want them): one lookup, since the store finds a service by its name in any case and
 * the app is the one service of that name (see `servicesOfApp`). It once also walked every
 * service of every namespace for other spellings of the app, which found nothing more and
 * cost every registration of a new instance 20 ms at 200,000 services.
 */
export function findInApp(store: StoreReader, namespace: string, app: string, id: string): StoredInstance | undefined {
  const entry = store.get({ namespace, service: app, instanceId: id });
  return entry && entry.record.deleted === null ? entry : undefined;
}

/** The key a Eureka registration writes: the service already holding that id, else the app name. */
export function registrationKey(store: StoreReader, namespace: string, app: string, id: string): InstanceKey {
  const existing = findInApp(store, namespace, app, id);
  return { namespace, service: existing?.record.service ?? app, instanceId: id };
}

/**
 * The first live instance with this id in any app, in the store's order of services
 * (`GET /eureka/instances/{id}`): a walk over the namespace's services in turns of `budget`
 * (one unit a service). A Eureka server walks its applications for this route too; in one
 * piece the walk held the loop 49-59 ms at 200,000 services. An index of every instance id
 * answered in one lookup but cost about 29 B of heap per instance (29 MB at 1,000,000) for a
 * route Eureka clients do not call in their cycle, so the walk stays, in turns.
 */
export async function findLiveByIdInTurns(
  store: Pick<StoreReader, 'servicesIn'>,
  namespace: string,
  id: string,
  leaseView: () => LeaseView,
  budget: TurnBudget,
): Promise<StoredInstance | undefined> {
  let view = leaseView();
  for (const entries of store.servicesIn(namespace)) {
    const entry = entries.instances.get(id);
    if (entry && isServed(entry, view)) return entry;
    if (budget.spend(1)) {
      await budget.yield();
      view = leaseView();
    }
  }
  return undefined;
}

function application(app: EurekaApp, defaults: ViewDefaults): EurekaApplicationJson {
  return { name: app.name, instance: app.instances.map((entry) => toEurekaInstance(entry, defaults)) };
}

function statusesOf(apps: EurekaApp[]): string[] {
  return apps.flatMap((app) => app.instances.map((entry) => entry.record.data.status));
}

/** `GET /eureka/apps`: every app, with the hash code of the whole registry. */
export function registryDocument(context: ReadContext): { applications: EurekaApplicationsJson } {
  const apps = liveApps(context.store, context.namespace, context.view);
  return {
    applications: {
      versions__delta: '1',
      apps__hashcode: reconcileHashCode(statusesOf(apps)),
      application: apps.map((app) => application(app, context.defaults)),
    },
  };
}

/** `GET /eureka/apps/{app}`: undefined when the app has no live instance (Eureka answers 404). */
export function appDocument(context: ReadContext, app: string): { application: EurekaApplicationJson } | undefined {
  const [found] = liveApps(context.store, context.namespace, context.view, app);
  return found ? { application: application(found, context.defaults) } : undefined;
}

/** Whether an instance is on the (secure) VIP address `vip` (its service name when it has no Eureka attributes). */
export function vipMatcher(vip: string, secure: boolean): (entry: StoredInstance) => boolean {
  const wanted = vip.toLowerCase();
  return (entry) => {
    const eureka = eurekaOf(entry.record.data);
    const addresses = eureka ? (secure ? eureka.secureVipAddress : eureka.vipAddress) : entry.record.service;
    return addresses !== null && addresses.split(',').some((address) => address.trim().toLowerCase() === wanted);
  };
}

/** The document of the VIP routes from apps already filtered to the VIP's instances. */
function vipApplications(apps: EurekaApp[], defaults: ViewDefaults): { applications: EurekaApplicationsJson } {
  return {
    applications: {
      versions__delta: '-1',
      apps__hashcode: reconcileHashCode(statusesOf(apps)),
      application: apps.map((app) => application(app, defaults)),
    },
  };
}

/** `GET /eureka/vips/{vip}` and `/svips/{svip}`: the apps with an instance on that (secure) VIP address (the routes use `SharedEurekaDocuments.vip`, in turns). */
export function vipDocument(context: ReadContext, vip: string, secure: boolean): { applications: EurekaApplicationsJson } {
  const matches = vipMatcher(vip, secure);
  const apps = liveApps(context.store, context.namespace, context.view)
    .map((app) => ({ name: app.name, instances: app.instances.filter(matches) }))
    .filter((app) => app.instances.length > 0);
  return vipApplications(apps, context.defaults);
}

/**
 * `GET /eureka/apps/delta`: the instances that changed within the window, each in its state
 * now (an instance no longer live is DELETED, with its last data so clients can match it), and
 * the hash code of the whole registry, which clients compare after applying the delta.
 */
export function deltaDocument(
  context: ReadContext,
  changes: RecentChange[],
  version: number,
  /** The apps hash code when the caller has it (shared-documents.ts keeps it per change); else computed here. */
  hashCode?: string,
): { applications: EurekaApplicationsJson } {
  const apps = new Map<string, EurekaInstanceJson[]>();
  for (const change of changes) {
    const instance = deltaInstance(context, change);
    let list = apps.get(instance.app);
    if (!list) apps.set(instance.app, (list = []));
    list.push(instance);
  }
  return {
    applications: {
      versions__delta: String(version),
      apps__hashcode: hashCode ?? reconcileHashCode(statusesOf(liveApps(context.store, context.namespace, context.view))),
      application: [...apps.entries()].map(([name, instance]) => ({ name, instance })),
    },
  };
}

/** One change of a delta: the instance in its state now, DELETED with its last data when no longer served. */
export function deltaInstance(context: Pick<ReadContext, 'store' | 'view' | 'defaults'>, change: RecentChange): EurekaInstanceJson {
  const { entry, action } = deltaEntry(context, change);
  return toEurekaInstance(entry, context.defaults, action);
}

/** `JSON.stringify(deltaInstance(context, change))`, written directly (instance-json.ts). */
export function deltaInstanceJson(context: Pick<ReadContext, 'store' | 'view' | 'defaults'>, change: RecentChange): string {
  const { entry, action } = deltaEntry(context, change);
  return eurekaInstanceJson(entry, context.defaults, action);
}

/** What a delta shows for a change: the instance now while served, else its last record as DELETED. */
function deltaEntry(context: Pick<ReadContext, 'store' | 'view'>, change: RecentChange): { entry: StoredInstance; action: ActionType } {
  const current = context.store.get(change.record);
  if (current && isServed(current, context.view)) return { entry: current, action: change.action === 'DELETED' ? 'ADDED' : change.action };
  const last = current ?? { record: change.record, leaseExpiresAtMs: 0, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: 0, revision: 0, subBucket: 0 };
  return { entry: last, action: 'DELETED' };
}
