import type { XdsLbPolicy } from './declaration.js';
import type { StoredInstance } from '../registry/types.js';
import type { ServiceViews, StableView } from '../views/service-views.js';
import { ZoneRegions } from '../views/zone-regions.js';
import { parseResourceName, resourceNameOf, type ServiceRef } from './names.js';
import type { AnyMessage, XdsProtos } from './protos.js';
import { buildServiceResources, type EndpointSource, type ResourceSettings, type ServiceResources } from './resources.js';

/** The resource kinds a service has, one per xDS type the registry serves. */
export type ResourceKind = 'listener' | 'cluster' | 'endpoints';

/** One encoded resource and its version: a number that changes only when its bytes do. */
export interface VersionedResource {
  any: AnyMessage;
  version: number;
}

/**
 * A service's encoded resources for one balancing policy, and what they were built from. What
 * a stream is sent of it never changes: a rebuild makes a new entry.
 */
export interface ServiceEntry {
  /** The resource name as the store spells the service (names.ts): the name its encoded resources carry. */
  readonly name: string;
  readonly namespace: string;
  readonly resources: Readonly<Record<ResourceKind, AnyMessage>>;
  readonly versions: Readonly<Record<ResourceKind, number>>;
  /** The stable view built from (replaced by a later one that serves the same instances). */
  view: StableView;
  /** The region each zone of the instances had (the peers' configuration: no record follows it). */
  readonly regions: ZoneRegions;
}

/** A service looked at by a wildcard build: its entry (null: nothing served), whether the store still holds it, and the work it took. */
export interface ResolvedService {
  /** Its resource name as the store spells the service; null for a service no name reaches (names.ts). */
  name: string | null;
  entry: ServiceEntry | null;
  stored: boolean;
  /** The service as the store spells it now (it may differ in case from the spelling looked up); absent when not stored. */
  service?: string;
  /** Units of work (wildcard-set.ts): 1, plus the served instances when their view or resources were built. */
  cost: number;
}

export interface CatalogComponents {
  views: ServiceViews;
  protos: XdsProtos;
  /**
   * The region of a zone as the peers' configuration says now (`RegistryNode.regionOfZone`, as
   * the native views show it); none: no zone has a region (tests of other concerns).
   */
  regionOfZone?: (zone: string) => string | undefined;
  /** Told once per build when instances had to be left out (a host that is no IP address...). */
  onSkipped?: (name: string, skipped: ServiceResources['skipped']) => void;
}

const NO_REGION = (): undefined => undefined;

/**
 * The resources of every exposed service, as ADS streams read them. Each service's resources
 * are built once per change of what it serves and kept with the stable view they were built
 * from (src/views/stable-views.ts), shared by every stream: a service whose stable view and
 * zones' regions still hold is not encoded again, so a push after one change encodes one
 * service, however many a wildcard subscription gets. Their versions move only when the
 * encoded bytes change, so a service rebuilt for a record's metadata alone pushes nothing.
 *
 * Entries are keyed by the service's identity (`ServiceViews.keyOf`: the store matches names
 * case-insensitively), never by a name as a client spelled it: `GREETER` and `greeter` are one
 * service, encoded once, its resources named as the store spells it. A stream still answers
 * each name under the spelling it subscribed to (stream.ts, delta-stream.ts).
 *
 * What is kept: one entry per served service and policy in use (two at most: ring_hash and
 * round_robin), dropped when the service serves nothing or leaves the store, as the views
 * keep theirs, and every entry of a policy once no stream uses it (`forgetPolicy`); its bytes
 * are those every response carries anyway.
 */
export class XdsCatalog {
  /** Per policy, each served service's entry by its identity (`views.keyOf`). */
  private readonly entries = new Map<XdsLbPolicy, Map<string, ServiceEntry>>();
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

  /** How many services' resources are kept, every policy counted (tests; bounded by the served services). */
  get keptCount(): number {
    let count = 0;
    for (const entries of this.entries.values()) count += entries.size;
    return count;
  }

  /** The exposed namespaces. */
  get namespaces(): readonly string[] {
    return this.init.namespaces;
  }

  /** Whether changes of this namespace matter here. */
  exposes(namespace: string): boolean {
    return this.init.namespaces.includes(namespace);
  }

  /**
   * A resource of the named service as built for clients of `lbPolicy`; null when the service
   * has no served instance (an absent resource, which state-of-the-world xDS shows by leaving
   * it out). Each policy's resources are built once per change of what is served, on first use.
   */
  get(name: string, kind: ResourceKind, lbPolicy: XdsLbPolicy): VersionedResource | null {
    const ref = this.refOf(name);
    // Every spelling of the service shares its one entry; the stream answers it under the name it asked for.
    const entry = ref === null ? null : this.resolve(ref.namespace, ref.service, lbPolicy, false).entry;
    return entry ? { any: entry.resources[kind], version: entry.versions[kind] } : null;
  }

  /** Drops every entry of `lbPolicy`: no stream uses that policy any more (the server counts them). */
  forgetPolicy(lbPolicy: XdsLbPolicy): void {
    this.entries.delete(lbPolicy);
  }

  /** Drops a service's entries, every policy's: the store no longer holds it (a purge, which no change announces). */
  forgetService(namespace: string, service: string): void {
    const key = this.components.views.keyOf(namespace, service);
    for (const entries of this.entries.values()) entries.delete(key);
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
   * The region of a zone as the peers' configuration says, asked once per zone over the
   * function's life: a wildcard build asks it for every service's zones.
   */
  regionsOfBuild(): (zone: string) => string | undefined {
    const regionOfZone = this.components.regionOfZone ?? NO_REGION;
    const known = new ZoneRegions();
    return (zone) => known.regionOf(zone, regionOfZone) ?? undefined;
  }

  /**
   * A listed service of an exposed namespace as a wildcard build reads it (wildcard-set.ts):
   * `service` as the listing spells it, which may be an older spelling of the service (one
   * purged and made again in another case: purges are not announced); the answer names it as
   * the store spells it now. `regionOf` answers the region of a zone, memoized over the build
   * by the caller.
   */
  listed(namespace: string, service: string, lbPolicy: XdsLbPolicy, regionOf: (zone: string) => string | undefined): ResolvedService {
    return this.resolve(namespace, service, lbPolicy, true, regionOf);
  }

  /**
   * The entry of a service for `lbPolicy`, built again only when what it serves may have
   * changed: its stable view was replaced and serves other instances (a record changed, or a
   * lease ran out, an owner went down or a guard turned: stable-views.ts), or a zone's region
   * moved. `reachableOnly`: a service whose name (as the store spells it) no name reaches is
   * not built (a wildcard's; a name a client asked for reached it already).
   */
  private resolve(namespace: string, service: string, lbPolicy: XdsLbPolicy, reachableOnly: boolean, regionOf = this.components.regionOfZone ?? NO_REGION): ResolvedService {
    const key = this.components.views.keyOf(namespace, service);
    // A service the store does not hold gets an empty view, built and not kept (stable-views.ts).
    const view = this.components.views.stable(namespace, service);
    if (view.revision === 0) return { name: null, entry: this.forget(key), stored: false, cost: 1 };
    const name = resourceNameOf(namespace, view.service);
    if (reachableOnly && !this.reaches(name, namespace, view.service)) return { name: null, entry: null, stored: true, service: view.service, cost: 1 };
    const entries = this.entriesOf(lbPolicy);
    const previous = entries.get(key);
    // A view built again (or first built here) went over the service's instances.
    let cost = 1 + (previous?.view === view ? 0 : view.served.length);
    if (view.served.length === 0) return { name, entry: this.forget(key), stored: true, service: view.service, cost };
    if (previous && previous.view !== view && previous.view.revision === view.revision && sameInstances(previous.view.served, view.served)) previous.view = view;
    if (previous?.view === view && previous.name === name && previous.regions.holds(regionOf)) return { name, entry: previous, stored: true, service: view.service, cost };
    cost += view.served.length;
    const entry = this.build(view, name, lbPolicy, regionOf, previous);
    entries.set(key, entry);
    return { name, entry, stored: true, service: view.service, cost };
  }

  /** Whether `name` (of `service` in `namespace`) reads as that service: a default-namespace name that reads as another namespace's does not (names.ts). */
  private reaches(name: string, namespace: string, service: string): boolean {
    const ref = this.refOf(name);
    return ref?.namespace === namespace && ref.service === service;
  }

  private build(view: StableView, name: string, lbPolicy: XdsLbPolicy, regionOfZone: (zone: string) => string | undefined, previous: ServiceEntry | undefined): ServiceEntry {
    const regions = new ZoneRegions();
    const instances = view.served.map((entry) => endpointSourceOf(entry, regions, regionOfZone));
    const settings: ResourceSettings = { lbPolicy };
    const built = buildServiceResources({ namespace: view.namespace, service: view.service, instances }, this.components.protos, settings);
    if (built.skipped.notAnIp + built.skipped.duplicateAddress > 0) this.components.onSkipped?.(built.name, built.skipped);
    const resources = { listener: built.listener, cluster: built.cluster, endpoints: built.endpoints };
    // Bytes named otherwise (the store's spelling changed) are other bytes: a new version.
    const versionOf = (kind: ResourceKind) => (previous && previous.resources[kind].value.equals(resources[kind].value) ? previous.versions[kind] : ++this.versionCounter);
    const versions = { listener: versionOf('listener'), cluster: versionOf('cluster'), endpoints: versionOf('endpoints') };
    return { name, namespace: view.namespace, resources, versions, view, regions };
  }

  private entriesOf(lbPolicy: XdsLbPolicy): Map<string, ServiceEntry> {
    let entries = this.entries.get(lbPolicy);
    if (!entries) this.entries.set(lbPolicy, (entries = new Map()));
    return entries;
  }

  /** Drops a service's entries, every policy's (it serves nothing, or the store no longer holds it). */
  private forget(key: string): null {
    for (const entries of this.entries.values()) entries.delete(key);
    return null;
  }
}

/** Whether two views serve the same stored instances, in the same order (the same records, at the same revision). */
function sameInstances(a: readonly StoredInstance[], b: readonly StoredInstance[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** What the ClusterLoadAssignment reads of an instance; its zone's region noted in `regions`. */
function endpointSourceOf(entry: StoredInstance, regions: ZoneRegions, regionOfZone: (zone: string) => string | undefined): EndpointSource {
  const { host, port, status, weight, zone } = entry.record.data;
  // No zone has no region, as the native view says (registry/view.ts zoneRegion).
  return { host, port, status, weight, zone, region: zone === '' ? null : regions.regionOf(zone, regionOfZone) };
}
