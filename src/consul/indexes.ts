import type { Clock } from '../clock/clock.js';
import { serviceIdentity } from '../registry/types.js';

/**
 * Consul's `X-Consul-Index` for this peer's answers. Consul's contract (its blocking-query
 * docs), which clients rely on: the index changes whenever the result changes, it is never 0,
 * and a client that sees it go backwards starts again. brpc's naming service, for one, drops
 * an answer whose index equals the one it holds, so an index that did not move when a
 * service's first instance came left it without servers.
 *
 * The store's revision cannot be it: it is per process (it starts again at 0 on a peer that
 * restarts without its data dir) and a service that never had a record has none. Here every
 * change the read layer announces (a write, a deletion, a replicated or repaired record, a
 * local hide or hold) gets a fresh index, the greater of one more than the last index this
 * peer gave and the change's wall time in microseconds-like units (ms x 1,000):
 * - it moves on every change of a service's served state, deletions included;
 * - it is never 0 and never goes backwards on one peer; a peer restarted without its data
 *   dir starts above every index its previous life gave (they were at most its wall time
 *   then, and any service it has not seen change answers the start time: `floor`), so long
 *   as the host's clock does not go back;
 * - peers give close indexes for the same change (their clocks are close): a client that
 *   fails over carries an index near the new peer's. One the new peer has not reached yet is
 *   answered at once (holdBlockingQuery), so the client sees the index go back and resets.
 * Changes that come from time alone (a lease that just ran out, before the reaper's eviction)
 * are not announced by the read layer and so move no index: the reaper's eviction, at most
 * `cluster.evictionIntervalMs` later (up to ten of them in a registry whose runs are spaced:
 * `REAPER_SCAN_SHARE_MAX`), does.
 */
export const INDEX_UNITS_PER_MS = 1_000;

export class ConsulIndexes {
  /** What a service or namespace that has not changed since this peer started answers. */
  readonly floor: number;
  private last: number;
  private readonly services = new Map<string, number>();
  private readonly namespaces = new Map<string, number>();

  constructor(private readonly clock: Pick<Clock, 'nowMs'>) {
    this.floor = Math.max(1, Math.floor(clock.nowMs()) * INDEX_UNITS_PER_MS);
    this.last = this.floor;
  }

  /** The greatest index this peer has given: an index past it comes from another peer or life. */
  get highWater(): number {
    return this.last;
  }

  /** Gives a change of `service` its index (also the namespace's, for the catalog); returns it. */
  advance(namespace: string, service: string): number {
    const next = Math.max(this.last + 1, Math.floor(this.clock.nowMs()) * INDEX_UNITS_PER_MS);
    this.last = next;
    this.services.set(serviceKey(namespace, service), next);
    this.namespaces.set(namespace, next);
    return next;
  }

  /** The index of a service's answers. */
  service(namespace: string, service: string): number {
    return this.services.get(serviceKey(namespace, service)) ?? this.floor;
  }

  /** The index of a namespace's catalog (`/v1/catalog/services`). */
  catalog(namespace: string): number {
    return this.namespaces.get(namespace) ?? this.floor;
  }
}

function serviceKey(namespace: string, service: string): string {
  return `${namespace}/${serviceIdentity(service)}`;
}
