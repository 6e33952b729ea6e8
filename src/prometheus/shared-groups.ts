import type { ServiceViews, StableView } from '../views/service-views.js';
import { encodeTargetGroups, TARGET_GROUPS_ENCODING, targetInstanceOf, type ServiceTargetGroups } from './target-groups.js';

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
 */

/** What is kept with a stable view: its groups and the regions they were built with. */
interface Built {
  groups: ServiceTargetGroups;
  regions: Map<string, string | undefined>;
}

/** One per stable view (its encoding): replaced in place when a region moved. */
interface Holder {
  built?: Built;
}

/** How long gathering the services of one answer may hold the event loop before it yields. */
export const YIELD_AFTER_MS = 5;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

function build(view: StableView, regionOfZone: (zone: string) => string | undefined): Built {
  const regions = new Map<string, string | undefined>();
  const region = (zone: string) => {
    if (!regions.has(zone)) regions.set(zone, regionOfZone(zone));
    return regions.get(zone);
  };
  return { groups: encodeTargetGroups({ instances: view.served.map((entry) => targetInstanceOf(entry, region)) }), regions };
}

function regionsHold(built: Built, regionOfZone: (zone: string) => string | undefined): boolean {
  for (const [zone, region] of built.regions) if (regionOfZone(zone) !== region) return false;
  return true;
}

/** A service's target groups now: shared while its stable view is current and its zones' regions hold. */
export function serviceTargetGroups(views: ServiceViews, regionOfZone: (zone: string) => string | undefined, namespace: string, service: string): ServiceTargetGroups {
  const view = views.stable(namespace, service);
  const holder = views.stableEncoding<Holder>(view, TARGET_GROUPS_ENCODING, () => ({}));
  if (!holder.built || !regionsHold(holder.built, regionOfZone)) holder.built = build(view, regionOfZone);
  return holder.built.groups;
}

/**
 * The target groups of `services`, in order. A service's build holds the loop once (about
 * 10 ms for 1,000 instances); between services it yields whenever it has held the loop for
 * `YIELD_AFTER_MS`, so a cold 100,000-instance answer does not keep heartbeats waiting for
 * all of it. Concurrent answers share what the first of them built.
 */
export async function selectedTargetGroups(
  views: ServiceViews,
  regionOfZone: (zone: string) => string | undefined,
  namespace: string,
  services: readonly string[],
): Promise<ServiceTargetGroups[]> {
  const out: ServiceTargetGroups[] = [];
  let sliceStartMs = performance.now();
  for (const service of services) {
    if (performance.now() - sliceStartMs >= YIELD_AFTER_MS) {
      await yieldToLoop();
      sliceStartMs = performance.now();
    }
    out.push(serviceTargetGroups(views, regionOfZone, namespace, service));
  }
  return out;
}
