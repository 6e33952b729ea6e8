/**
 * What one service's snapshot costs in a turn's units (turns.ts) besides its instances: its
 * view, frame and channel, whatever its size. At 1,000,000 instances a turn of 66 services of
 * 5 instances took 1.7 ms (median), one of a service of 1,000 took 7.8 ms
 * (bench/watch-wildcard.ts): a service's own cost is a few instances' worth.
 */
export const SNAPSHOT_SERVICE_UNITS = 5;

/** What detaching a closed subscriber from one channel costs in a turn's units. */
export const DETACH_UNITS = 1;

/** The units of one service's snapshot of `instances` records (pure). */
export function snapshotUnits(instances: number): number {
  return SNAPSHOT_SERVICE_UNITS + instances;
}

/**
 * The services a subscription has still to be sent a snapshot of: `services[next..]`. A
 * wildcard subscription's list is the namespace's sorted names as the subscription began
 * (ServiceViews.servicesOf, never changed once made), so whether a service is still ahead is a
 * binary search: a change to it is told by its snapshot, not by a delta before it.
 */
export class SnapshotCursor {
  next = 0;

  constructor(
    readonly services: readonly string[],
    /** `services` is sorted (as `Array.prototype.sort` orders strings): `ahead` may be asked. */
    private readonly sorted: boolean,
  ) {}

  get done(): boolean {
    return this.next >= this.services.length;
  }

  /** The service whose snapshot is next; undefined when done. */
  get nextService(): string | undefined {
    return this.services[this.next];
  }

  /** Whether `service` (named as stored) is in the list and its snapshot not sent yet. */
  ahead(service: string): boolean {
    if (!this.sorted) return this.services.indexOf(service, this.next) >= 0;
    let low = this.next;
    let high = this.services.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.services[middle]! < service) low = middle + 1;
      else high = middle;
    }
    return low < this.services.length && this.services[low] === service;
  }
}
