import type { InstanceStore } from '../registry/store.js';
import { serviceIdentity, type StoredInstance } from '../registry/types.js';
import { isServed, type EvictionGuards, type LeaseView } from '../registry/visibility.js';

/**
 * Views for encodings that do not move with time: which instances are served and their
 * records, nothing else (no lease countdown). A native listing carries `leaseExpiresInMs` and
 * so is rebuilt at least every second (service-views.ts); a Eureka document, an SSE frame's
 * membership, a DNS answer or an xDS resource only change when a record does or when an
 * instance starts or stops being served. Rebuilding those every second would cost a 100,000
 * instance Eureka registry its whole build each second under a flood of full fetches.
 *
 * A stable view is kept until the service changes in the store, or until what is served could
 * have changed without a store change: an owner's liveness flipped, an eviction guard turned
 * on or off, or a lease that keeps an instance served reached its end (a heartbeat moves that
 * end further in place, so this is conservative: the view is rebuilt a little early, never
 * late). Between those, a fresh build would serve exactly the same instances and records.
 * Each encoding of it may add its own age bound (`maxAgeMs`) for fields it derives from
 * the lease (Eureka's informational `lastRenewalTimestamp`).
 */
export interface StableView {
  readonly namespace: string;
  readonly service: string;
  /** The store's revision of the service's last change (0: never seen). */
  readonly revision: number;
  readonly builtAtMs: number;
  /** Served instances, every status, sorted by instance id (sorted when first read, see `BuiltView`). */
  readonly served: readonly StoredInstance[];
  /** The same instances in no set order: for a reader that only counts them, which then never waits for the sort. */
  readonly servedInAnyOrder: readonly StoredInstance[];
}

/**
 * A stable view whose instances are sorted the first time a reader needs them in order. The
 * counts of `GET /v1/services`, the Nacos service list and its `/operator/metrics` read every
 * service's view and need no order (the dashboard's registrations list each instance, in
 * order, and so sort): after a change to most services (a heal's writes,
 * a load), sorting every view for them was about half of what building the views cost (the
 * comparator alone 617 ms of a paused peer's first 4 s after its pause at 1,000,000,
 * bench/findings.md, 2026-12-07 evening). The sort happens in place, once, on first `served`.
 */
class BuiltView implements StableView {
  private sorted = false;

  constructor(
    readonly namespace: string,
    readonly service: string,
    readonly revision: number,
    readonly builtAtMs: number,
    private readonly instances: StoredInstance[],
  ) {}

  get served(): readonly StoredInstance[] {
    if (!this.sorted) {
      this.instances.sort(byInstanceId);
      this.sorted = true;
    }
    return this.instances;
  }

  get servedInAnyOrder(): readonly StoredInstance[] {
    return this.instances;
  }
}

export interface Stamp {
  suspendOwnedExpiry: boolean;
  holdDownOwners: boolean;
  /** Owners of the service's records (other than this peer) and whether each was up. */
  owners: string[];
  ownersUp: boolean[];
  /** The earliest time a served instance may stop being served without a store change. */
  servedUntilMs: number;
}

interface Cached {
  view: StableView;
  stamp: Stamp;
  encodings: Map<string, { value: unknown; builtAtMs: number }>;
}

function byInstanceId(a: StoredInstance, b: StoredInstance): number {
  const x = a.record.instanceId;
  const y = b.record.instanceId;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Whether what was served at `stamp` is still what would be served now (pure; see the module comment). */
export function stampHolds(stamp: Stamp, leases: LeaseView): boolean {
  if (leases.nowMs >= stamp.servedUntilMs) return false;
  if (stamp.suspendOwnedExpiry !== leases.guards.suspendOwnedExpiry || stamp.holdDownOwners !== leases.guards.holdDownOwners) return false;
  for (let i = 0; i < stamp.owners.length; i++) if (leases.liveness.isUp(stamp.owners[i]!) !== stamp.ownersUp[i]) return false;
  return true;
}

/**
 * One stamp for a set of views taken from one lease view (a document built from many services):
 * it holds while every view's stamp would. Undefined when a view has none (not current) or two
 * disagree about an owner or a guard (taken across a change): such a set is not kept.
 */
export function combinedStamp(stamps: readonly (Stamp | undefined)[]): Stamp | undefined {
  const combined = new StampCombiner();
  for (const stamp of stamps) combined.add(stamp);
  return combined.result();
}

/**
 * `combinedStamp`, fed one stamp at a time: a reader of many services folds each view's stamp
 * in as it goes, in the turns its walk takes. Combined at the end of a walk, the stamps of
 * 200,000 services took 148 ms of one turn (bench/namespace-lists.ts, 2026-12-07).
 */
export class StampCombiner {
  private first: Stamp | undefined;
  private stamps = 0;
  /** A stamp was missing or disagreed: the set holds no stamp. */
  private broken = false;
  private readonly up = new Map<string, boolean>();
  private servedUntilMs = Number.POSITIVE_INFINITY;

  add(stamp: Stamp | undefined): void {
    this.stamps += 1;
    if (this.broken) return;
    const first = (this.first ??= stamp);
    if (!stamp || !first || stamp.suspendOwnedExpiry !== first.suspendOwnedExpiry || stamp.holdDownOwners !== first.holdDownOwners) {
      this.broken = true;
      return;
    }
    for (let i = 0; i < stamp.owners.length; i++) {
      const owner = stamp.owners[i]!;
      const known = this.up.get(owner);
      if (known !== undefined && known !== stamp.ownersUp[i]) {
        this.broken = true;
        return;
      }
      this.up.set(owner, stamp.ownersUp[i]!);
    }
    this.servedUntilMs = Math.min(this.servedUntilMs, stamp.servedUntilMs);
  }

  result(): Stamp | undefined {
    if (this.stamps === 0) return { suspendOwnedExpiry: false, holdDownOwners: false, owners: [], ownersUp: [], servedUntilMs: Number.POSITIVE_INFINITY };
    if (this.broken || !this.first) return undefined;
    return { ...guardsOf(this.first), owners: [...this.up.keys()], ownersUp: [...this.up.values()], servedUntilMs: this.servedUntilMs };
  }
}

function guardsOf(guards: EvictionGuards): Pick<Stamp, 'suspendOwnedExpiry' | 'holdDownOwners'> {
  return { suspendOwnedExpiry: guards.suspendOwnedExpiry, holdDownOwners: guards.holdDownOwners };
}

export class StableViews {
  private readonly cache = new Map<string, Map<string, Cached>>();

  constructor(private readonly components: { store: InstanceStore; leaseView: () => LeaseView }) {}

  /** The served instances of a service now; `leases` lets a caller reading many services pass one. */
  get(namespace: string, service: string, leases: LeaseView = this.components.leaseView()): StableView {
    return this.cached(namespace, service, leases).view;
  }

  /**
   * The encoding `name` of a stable view, built once and shared while the view is current and
   * the encoding is younger than `maxAgeMs` (Infinity: no age bound). A view no longer current
   * gets a build of its own, not shared.
   */
  encoding<T>(view: StableView, name: string, build: (view: StableView) => T, maxAgeMs = Number.POSITIVE_INFINITY, nowMs?: number): T {
    const cached = this.cache.get(view.namespace)?.get(serviceIdentity(view.service));
    if (!cached || cached.view !== view) return build(view);
    const atMs = nowMs ?? this.components.leaseView().nowMs;
    const found = cached.encodings.get(name);
    if (found && atMs - found.builtAtMs < maxAgeMs && atMs >= found.builtAtMs) return found.value as T;
    const value = build(view);
    cached.encodings.set(name, { value, builtAtMs: atMs });
    return value;
  }

  /** The stamp of a view while it is the current one (what tells when it stops being current); undefined otherwise. */
  stampOf(view: StableView): Stamp | undefined {
    const cached = this.cache.get(view.namespace)?.get(serviceIdentity(view.service));
    return cached?.view === view ? cached.stamp : undefined;
  }

  /** Forgets a service's view (the store changed it). */
  invalidate(namespace: string, service: string): void {
    const services = this.cache.get(namespace);
    if (services?.delete(serviceIdentity(service)) && services.size === 0) this.cache.delete(namespace);
  }

  clear(): void {
    this.cache.clear();
  }

  /** How many views are kept (bounded by the services the store holds). */
  get keptCount(): number {
    let count = 0;
    for (const services of this.cache.values()) count += services.size;
    return count;
  }

  private cached(namespace: string, service: string, leases: LeaseView): Cached {
    const current = this.cache.get(namespace)?.get(serviceIdentity(service));
    const known = this.components.store.getService(namespace, service);
    const revision = known?.revision ?? 0;
    if (current && current.view.revision === revision && leases.nowMs >= current.view.builtAtMs && stampHolds(current.stamp, leases)) return current;
    const fresh = this.build(namespace, service, revision, leases);
    // A name the store does not hold gets its (empty) view built, not kept: any client can ask
    // for any name (a DNS query, an xDS or Nacos subscription, a Consul blocking query), and a
    // view kept per name asked would grow without bound. An empty view is cheap to build again.
    if (!known) return fresh;
    let services = this.cache.get(namespace);
    if (!services) this.cache.set(namespace, (services = new Map()));
    services.set(serviceIdentity(service), fresh);
    return fresh;
  }

  private build(namespace: string, service: string, revision: number, leases: LeaseView): Cached {
    const entries = this.components.store.getService(namespace, service);
    const { served, stamp } = servedInAnyOrder(entries?.instances.values() ?? [], leases);
    return { view: new BuiltView(namespace, entries?.service ?? service, revision, leases.nowMs, served), stamp, encodings: new Map() };
  }
}

/**
 * The served instances of a service now, sorted by id, and the stamp that tells when what is
 * served may have changed without a store change (stampHolds): the native view's (service-views.ts);
 * a stable view takes the same instances unsorted (`servedInAnyOrder`) and sorts them when read.
 */
export function servedNow(instances: Iterable<StoredInstance>, leases: LeaseView): { served: StoredInstance[]; stamp: Stamp } {
  const now = servedInAnyOrder(instances, leases);
  now.served.sort(byInstanceId);
  return now;
}

/** `servedNow` without the sort: the instances in the store's order. */
function servedInAnyOrder(instances: Iterable<StoredInstance>, leases: LeaseView): { served: StoredInstance[]; stamp: Stamp } {
  const served: StoredInstance[] = [];
  const owners = new Map<string, boolean>();
  let servedUntilMs = Number.POSITIVE_INFINITY;
  for (const entry of instances) {
    const { record } = entry;
    if (record.deleted !== null || entry.hidden) continue;
    const own = record.owner === leases.selfId;
    if (!own && !owners.has(record.owner)) owners.set(record.owner, leases.liveness.isUp(record.owner));
    if (!isServed(entry, leases)) continue;
    served.push(entry);
    // Served by its lease alone: its state (live, then held or expired) may change when the lease ends.
    const byLease = own || !owners.get(record.owner);
    if (byLease && entry.leaseExpiresAtMs > leases.nowMs && entry.leaseExpiresAtMs < servedUntilMs) servedUntilMs = entry.leaseExpiresAtMs;
  }
  return { served, stamp: { ...guardsOf(leases.guards), owners: [...owners.keys()], ownersUp: [...owners.values()], servedUntilMs } };
}
