import { orderByProximity } from '../registry/queries.js';
import type { ServiceView, ServiceViews } from '../views/service-views.js';
import { catalogService, consulInstance, healthEntry, type ConsulInstance } from './payloads.js';

/**
 * The Consul encodings of one service's view, built once per view (on the first Consul read
 * after a change) and shared by every reader and every blocking query woken by the change:
 * each instance's health entry, catalog entry and checks as JSON text, and the whole bodies
 * for the reads that need no filter (all instances, passing ones) as UTF-8 bytes, sent as they
 * are rather than encoded again per request (a 1,000-instance health answer is 1.1 MB: 4 ms
 * of CPU per read as a string, 1.5 to 1.9 as bytes; docs/consul.md). Filtered reads (tag, dc,
 * near) join the texts of the instances they keep: no object is serialized per read.
 *
 * Kept with the native view, they are rebuilt at the first read a second after the last
 * build (DEFAULT_VIEW_MAX_AGE_MS), which costs a 1,000-instance service about 100 ms of CPU.
 * Kept with the stable view instead they would not be, but the stable views are never swept:
 * as built here (objects, texts and bytes per instance) that held 7.6 MB per 1,000 instances
 * for as long as the service does not change (765 MB more RSS at 100,000 instances, each
 * service read once), so the move waits for a slimmer encoding (docs/consul.md).
 */
export interface EncodedInstance {
  instance: ConsulInstance;
  healthJson: string;
  catalogJson: string;
  checksJson: string[];
}

export interface ServiceEncoding {
  view: ServiceView;
  instances: EncodedInstance[];
  healthJson: Buffer;
  healthPassingJson: Buffer;
  catalogJson: Buffer;
  checksJson: Buffer;
  /** Every tag of the service's instances, sorted, each once (for `/v1/catalog/services`). */
  tags: string[];
}

const ENCODING = 'consul';

function joined(texts: readonly string[]): string {
  return `[${texts.join(',')}]`;
}

function build(view: ServiceView, localDatacenter: string): ServiceEncoding {
  const instances = view.served.map((entry, i): EncodedInstance => {
    const instance = consulInstance(entry, view.instances[i]!, localDatacenter);
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
  };
}

/** The Consul encoding of a service's current view. */
export function serviceEncoding(views: ServiceViews, namespace: string, service: string, localDatacenter: string): ServiceEncoding {
  return views.encoded(namespace, service, ENCODING, (view) => build(view, localDatacenter));
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
