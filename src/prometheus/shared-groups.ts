import type { ServiceViews, StableView } from '../views/service-views.js';
import { ZoneRegions } from '../views/zone-regions.js';
import { readsBudget as budget, sharedBuild, yieldToLoop, type SharedBuild } from '../http/loop-budget.js';
import {
  assemblingTargetGroups,
  selectedRuns,
  TARGET_GROUPS_ENCODING,
  targetGroupJson,
  targetInstanceOf,
  type LabelNameCache,
  type PartFilter,
  type ServiceTargetGroups,
  type TargetInstance,
} from './target-groups.js';

/**
 * Each service's target groups, built once and shared by every scraper until the service
 * changes (docs/prometheus.md).
 *
 * They are kept with the read layer's stable view of the service (ServiceViews.stable), not
 * with the native view: target groups carry no lease countdown, and the native view is
 * rebuilt every second, so a Prometheus refreshing every 15 to 60 s found nothing built and
 * rebuilt every service; at 100,000 instances a build took over a second, and eight scrapers
 * arriving together each rebuilt what had aged past the second meanwhile (26.9 s for the
 * eight, a 2.7 s stall; bench/out figures in docs/prometheus.md). A stable view is replaced
 * when the service changes and as soon as what is served could have changed with time alone.
 *
 * The one input that is neither a record nor a lease is the region of a zone (from the peers'
 * configuration, which membership may learn later): each build notes the region it gave each
 * zone, and a read rebuilds when any of them changed.
 *
 * What a group or zone filter keeps of a service (its runs of matching groups) is kept with
 * the groups too, per filter, so that scrapers of the same filtered job share it as well.
 */

/** What is kept with a stable view: its groups and the regions they were built with. */
interface Built {
  groups: ServiceTargetGroups;
  regions: ZoneRegions;
  /** selectedRuns of the groups per filter (`group|zone`), at most MAX_KEPT_FILTERS. */
  runs: Map<string, Buffer[]>;
}

/** Filters whose runs are kept per service; past it they are forgotten (a scrape config asks a handful). */
export const MAX_KEPT_FILTERS = 16;

/** One per stable view (its encoding): replaced in place when a region moved. */
type Holder = SharedBuild<Built>;

/** Instances encoded between two looks at the loop budget (50 take about half a millisecond). */
const CHECK_EVERY_INSTANCES = 50;


/**
 * Builds a service's groups in slices: it looks at the shared loop budget every
 * `CHECK_EVERY_INSTANCES` instances and yields when it is spent, so that no service, however
 * big (10,000 instances take about 100 ms), holds the loop for all of its build.
 */
async function build(view: StableView, regionOfZone: (zone: string) => string | undefined): Promise<Built> {
  const regions = new ZoneRegions();
  const region = (zone: string) => regions.regionOf(zone, regionOfZone) ?? undefined;
  const names: LabelNameCache = new Map();
  const selected: TargetInstance[] = [];
  const encoded: Buffer[] = [];
  const { served } = view;
  for (let i = 0; i < served.length; i++) {
    if (i % CHECK_EVERY_INSTANCES === 0 && budget.spent()) await yieldToLoop();
    const instance = targetInstanceOf(served[i]!, region);
    if (instance.status !== 'UP') continue;
    selected.push(instance);
    encoded.push(Buffer.from(targetGroupJson(instance, names)));
  }
  const steps = assemblingTargetGroups(selected, encoded);
  for (;;) {
    const step = steps.next();
    if (step.done) return { groups: step.value, regions, runs: new Map() };
    if (budget.spent()) await yieldToLoop();
  }
}

async function built(views: ServiceViews, regionOfZone: (zone: string) => string | undefined, namespace: string, service: string): Promise<Built> {
  const view = views.stable(namespace, service);
  const holder = views.stableEncoding<Holder>(view, TARGET_GROUPS_ENCODING, () => ({}));
  return sharedBuild(holder, () => build(view, regionOfZone), (built) => built.regions.holds(regionOfZone));
}

/** A service's target groups now: shared while its stable view is current and its zones' regions hold. */
export async function serviceTargetGroups(
  views: ServiceViews,
  regionOfZone: (zone: string) => string | undefined,
  namespace: string,
  service: string,
): Promise<ServiceTargetGroups> {
  return (await built(views, regionOfZone, namespace, service)).groups;
}

/** What `filter` keeps of a service now (selectedRuns), shared like its groups. */
export async function serviceRuns(
  views: ServiceViews,
  regionOfZone: (zone: string) => string | undefined,
  namespace: string,
  service: string,
  filter: PartFilter,
): Promise<Buffer[]> {
  const { groups, runs } = await built(views, regionOfZone, namespace, service);
  if (filter.group === null && filter.zone === null) return selectedRuns(groups, filter);
  const key = `${filter.group ?? ''}|${filter.zone ?? ''}`;
  let kept = runs.get(key);
  if (kept === undefined) {
    if (runs.size >= MAX_KEPT_FILTERS) runs.clear();
    runs.set(key, (kept = selectedRuns(groups, filter)));
  }
  return kept;
}

/**
 * What `filter` keeps of each of `services`, in order. Every answer being gathered, and every
 * build, yields once they have held the loop for `YIELD_AFTER_MS` together, between services
 * and within a build, so a cold 100,000-instance answer does not keep heartbeats waiting for
 * all of it. Concurrent answers share what the first of them built, or wait for its build.
 */
export async function gatherRuns(
  views: ServiceViews,
  regionOfZone: (zone: string) => string | undefined,
  namespace: string,
  services: readonly string[],
  filter: PartFilter,
): Promise<Buffer[][]> {
  const out: Buffer[][] = [];
  for (const service of services) {
    if (budget.spent()) await yieldToLoop();
    out.push(await serviceRuns(views, regionOfZone, namespace, service, filter));
  }
  return out;
}
