import type { RegistryReads } from '../app/reads.js';
import { orderByProximity } from '../registry/queries.js';
import { toInstanceView } from '../registry/view.js';
import type { StableView } from '../views/service-views.js';
import { ZoneRegions } from '../views/zone-regions.js';
import { catalogService, consulInstance, healthEntry, type ConsulInstance } from './payloads.js';

/**
 * The Consul encodings of one service, built once per change (on the first Consul read after
 * it) and shared by every reader and every blocking query woken by the change: each
 * instance's health entry, catalog entry and checks as JSON text, and the whole bodies for the
 * reads that need no filter as UTF-8 bytes (sent as they are, not encoded per request).
 * Filtered reads (tag, dc, near) join the texts of the instances they keep: no object is
 * serialized per read.
 *
 * They are kept with the read layer's stable view of the service, not with the native view:
 * nothing Consul shows moves with time but whether an instance is served and whether its lease
 * is live or held, which is what a stable view follows (stable-views.ts). Kept with the native
 * view, rebuilt every second, a read of a 1,000-instance service more than a second after the
 * last cost 100 to 120 ms of CPU instead of 2 to 5 (docs/consul.md), and `/v1/catalog/services`
 * rebuilt every service of the namespace. The zones' regions (the instances' Datacenter) are
 * checked at every read (ZoneRegions): membership may learn a region later.
 */
export interface EncodedInstance {
  instance: ConsulInstance;
  healthJson: string;
  catalogJson: string;
  checksJson: string[];
}

export interface ServiceEncoding {
  view: StableView;
  instances: EncodedInstance[];
  healthJson: Buffer;
  healthPassingJson: Buffer;
  catalogJson: Buffer;
  checksJson: Buffer;
  /** Every tag of the service's instances, sorted, each once (for `/v1/catalog/services`). */
  tags: string[];
  /** The regions the instances' datacenters were built with. */
  regions: ZoneRegions;
}

/** What the encodings are read from: the read layer, the lease rules now, and the zones' regions. */
export type ConsulReads = Pick<RegistryReads, 'views' | 'leaseView' | 'regionOfZone'>;

const ENCODING = 'consul';

function joined(texts: readonly string[]): string {
  return `[${texts.join(',')}]`;
}

function build(view: StableView, reads: ConsulReads, localDatacenter: string): ServiceEncoding {
  const leases = reads.leaseView();
  const regions = new ZoneRegions();
  const instances = view.served.map((entry): EncodedInstance => {
    const native = toInstanceView(entry, leases);
    if (native.zone !== '') regions.note(native.zone, native.region);
    const instance = consulInstance(entry, native, localDatacenter);
    return {
      instance,
      healthJson: JSON.stringify(healthEntry(instance)),
      catalogJson: JSON.stringify(catalogService(instance)),
      checksJson: instance.checks.map((check) => JSON.stringify(check)),
    };
  });
  const tags = new Set<string>();
  for (const item of instances) for (const tag of item.instance.tags) tags.add(tag);
  const bytes = (texts: readonly string[]) => Buffer.from(joined(texts));
  return {
    view,
    instances,
    healthJson: bytes(instances.map((item) => item.healthJson)),
    healthPassingJson: bytes(instances.filter((item) => item.instance.passing).map((item) => item.healthJson)),
    catalogJson: bytes(instances.map((item) => item.catalogJson)),
    checksJson: bytes(instances.flatMap((item) => item.checksJson)),
    tags: [...tags].sort(),
    regions,
  };
}

/** One per stable view (its encoding): replaced in place when a zone's region moved. */
interface Holder {
  built?: ServiceEncoding;
}

/** The Consul encoding of a service now: shared while its stable view is current and its zones' regions hold. */
export function serviceEncoding(reads: ConsulReads, namespace: string, service: string, localDatacenter: string): ServiceEncoding {
  const view = reads.views.stable(namespace, service);
  const holder = reads.views.stableEncoding<Holder>(view, ENCODING, () => ({}));
  if (!holder.built || !holder.built.regions.holds((zone) => reads.regionOfZone(zone))) holder.built = build(view, reads, localDatacenter);
  return holder.built;
}

/** What a catalog or health read keeps of a service's instances. */
export interface InstanceFilter {
  passing: boolean;
  /** Every one of these tags (Consul's repeated `tag`). */
  tags: readonly string[];
  /** Only this datacenter (our region); null: every one. */
  datacenter: string | null;
  /** Nearest first to this zone; null: by instance id. */
  nearZone: string | null;
}

/** The instances a filter keeps, in the order it asks for. */
export function selectInstances(
  encoding: ServiceEncoding,
  filter: InstanceFilter,
  regionOfZone: (zone: string) => string | undefined,
): EncodedInstance[] {
  const kept = encoding.instances.filter(
    (item) =>
      (!filter.passing || item.instance.passing) &&
      (filter.datacenter === null || item.instance.datacenter === filter.datacenter) &&
      filter.tags.every((tag) => item.instance.tags.includes(tag)),
  );
  if (filter.nearZone === null) return kept;
  const ranked = orderByProximity(
    kept.map((item) => ({ zone: item.instance.zone, instanceId: item.instance.id, item })),
    filter.nearZone,
    regionOfZone,
  );
  return ranked.map((ranked) => ranked.item);
}

/** The body of a filtered read: the shared bytes when nothing but `passing` is asked. */
export function healthBody(encoding: ServiceEncoding, filter: InstanceFilter, regionOfZone: (zone: string) => string | undefined): Buffer | string {
  if (filter.tags.length === 0 && filter.datacenter === null && filter.nearZone === null) {
    return filter.passing ? encoding.healthPassingJson : encoding.healthJson;
  }
  return joined(selectInstances(encoding, filter, regionOfZone).map((item) => item.healthJson));
}

export function catalogBody(encoding: ServiceEncoding, filter: InstanceFilter, regionOfZone: (zone: string) => string | undefined): Buffer | string {
  if (filter.tags.length === 0 && filter.datacenter === null && filter.nearZone === null && !filter.passing) return encoding.catalogJson;
  return joined(selectInstances(encoding, filter, regionOfZone).map((item) => item.catalogJson));
}

export function checksBody(encoding: ServiceEncoding, filter: InstanceFilter, regionOfZone: (zone: string) => string | undefined): Buffer | string {
  if (filter.tags.length === 0 && filter.datacenter === null && filter.nearZone === null && !filter.passing) return encoding.checksJson;
  return joined(selectInstances(encoding, filter, regionOfZone).flatMap((item) => item.checksJson));
}
