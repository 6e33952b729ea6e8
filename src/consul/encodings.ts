import { orderByProximity } from '../registry/queries.js';
import type { ServiceView, ServiceViews } from '../views/service-views.js';
import { readsBudget, sharedBuild, yieldToLoop, type SharedBuild } from '../http/loop-budget.js';
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
 * build (DEFAULT_VIEW_MAX_AGE_MS), which costs a 1,000-instance service about 50 ms of CPU.
 * The build works in slices on the shared loop budget (src/http/loop-budget.ts), so a
 * heartbeat waits for one slice rather than the whole service, and the reads arriving while
 * it runs wait for that one build rather than each starting their own.
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
}

const ENCODING = 'consul';

function joined(texts: readonly string[]): string {
  return `[${texts.join(',')}]`;
}

/** Instances encoded between two looks at the loop budget. */
const CHECK_EVERY_INSTANCES = 50;

async function build(view: ServiceView, localDatacenter: string): Promise<ServiceEncoding> {
  const instances: EncodedInstance[] = [];
  for (let i = 0; i < view.served.length; i++) {
    if (i % CHECK_EVERY_INSTANCES === 0 && readsBudget.spent()) await yieldToLoop();
    const instance = consulInstance(view.served[i]!, view.instances[i]!, localDatacenter);
    instances.push({
      instance,
      healthJson: JSON.stringify(healthEntry(instance)),
      catalogJson: JSON.stringify(catalogService(instance)),
      checksJson: instance.checks.map((check) => JSON.stringify(check)),
    });
  }
  const bytes = (texts: readonly string[]) => Buffer.from(joined(texts));
  return {
    view,
    instances,
    healthJson: bytes(instances.map((item) => item.healthJson)),
    healthPassingJson: bytes(instances.filter((item) => item.instance.passing).map((item) => item.healthJson)),
    catalogJson: bytes(instances.map((item) => item.catalogJson)),
    checksJson: bytes(instances.flatMap((item) => item.checksJson)),
  };
}

/**
 * The Consul encoding of a service's current view (the view is taken when this is called: a
 * read's index, taken in the same turn, is that view's).
 */
export async function serviceEncoding(views: ServiceViews, namespace: string, service: string, localDatacenter: string): Promise<ServiceEncoding> {
  const view = views.get(namespace, service);
  // One per view: the encoding, or the build under way that every read arriving meanwhile waits for.
  return sharedBuild(views.encoding<SharedBuild<ServiceEncoding>>(view, ENCODING, () => ({})), () => build(view, localDatacenter));
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
