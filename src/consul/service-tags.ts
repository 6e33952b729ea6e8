import type { ServiceViews, StableView } from '../views/service-views.js';
import { zoneRegion } from '../registry/view.js';
import { ZoneRegions } from '../views/zone-regions.js';
import { tagsOf } from './fields.js';

/**
 * What `GET /v1/catalog/services` needs of one service: its name and its instances' tags, in
 * all and per datacenter. None of it moves with time (tags are in the record, a datacenter is
 * the region of the instance's zone), so it is kept with the service's stable view
 * (ServiceViews.stableEncoding) and built once per change, as a few strings per service.
 *
 * Before, the route built each service's whole Consul encoding (every instance's health and
 * catalog JSON) only to read its tags, and those are kept with the native view, which is
 * rebuilt a second after its last build: at 100,000 instances, the first read of each second
 * held the loop for every service of the registry (docs/consul.md gives the figures).
 */
export interface ServiceTags {
  /** The service's name as its records spell it. */
  service: string;
  /** Served instances (every status), as the catalog lists a service with any. */
  instances: number;
  /** Every tag of the instances, sorted, each once. */
  all: readonly string[];
  /** The same, per datacenter that has instances of the service. */
  byDatacenter: ReadonlyMap<string, readonly string[]>;
}

const ENCODING = 'consul-tags';

interface Holder {
  built?: { tags: ServiceTags; regions: ZoneRegions };
}

const sorted = (tags: Iterable<string>): string[] => [...new Set(tags)].sort();

function build(view: StableView, regionOfZone: (zone: string) => string | undefined, localDatacenter: string): NonNullable<Holder['built']> {
  const regions = new ZoneRegions();
  const region = (zone: string) => regions.regionOf(zone, regionOfZone) ?? undefined;
  const all: string[] = [];
  const perDatacenter = new Map<string, string[]>();
  for (const entry of view.served) {
    const tags = tagsOf(entry.record.data);
    // The datacenter a catalog entry shows (consulInstance): its zone's region, or ours.
    const datacenter = zoneRegion(entry.record.data.zone, region) ?? localDatacenter;
    let inDatacenter = perDatacenter.get(datacenter);
    if (!inDatacenter) perDatacenter.set(datacenter, (inDatacenter = []));
    for (const tag of tags) {
      all.push(tag);
      inDatacenter.push(tag);
    }
  }
  const byDatacenter = new Map([...perDatacenter].map(([datacenter, tags]) => [datacenter, sorted(tags)] as const));
  return { tags: { service: view.service, instances: view.served.length, all: sorted(all), byDatacenter }, regions };
}

/** A service's tags now: shared while its stable view is current and its zones' regions hold. */
export function serviceTags(
  views: ServiceViews,
  regionOfZone: (zone: string) => string | undefined,
  localDatacenter: string,
  namespace: string,
  service: string,
): ServiceTags {
  const view = views.stable(namespace, service);
  const holder = views.stableEncoding<Holder>(view, ENCODING, () => ({}));
  if (!holder.built || !holder.built.regions.holds(regionOfZone)) holder.built = build(view, regionOfZone, localDatacenter);
  return holder.built.tags;
}
