import type { Clock, TimerHandle } from '../clock/clock.js';
import type { InstanceStore, StoreChange } from '../registry/store.js';
import { serviceIdentity, type StoredInstance } from '../registry/types.js';
import { toInstanceView, type InstanceView } from '../registry/view.js';
import type { LeaseView } from '../registry/visibility.js';
import { servedNow, StableViews, stampHolds, type Stamp, type StableView } from './stable-views.js';

/**
 * The read layer: what every protocol adapter serves (native /v1, the SSE watch and every
 * other protocol) is read from here, never from the store directly.
 *
 * Per (namespace, service) it keeps one `ServiceView`: the instances served now, built once
 * after a change and shared by every reader until the next one. Each protocol asks for its
 * encoding of a view (`encoding(view, name, build)`): built on the first read after a change
 * and shared by every reader of the same view, so a read costs a lookup, not a build.
 *
 * Exactness: a view is rebuilt on the first read after any change the store announces (local
 * writes, replicated writes, anti-entropy repairs, evictions, hides, holds), and as soon as
 * what is served could have changed with time alone (a served lease reached its end, an
 * owner's liveness flipped, an eviction guard turned on or off: see stable-views.ts). What
 * moves with time alone and nothing else, the lease countdown `leaseExpiresInMs`, may lag by
 * at most `maxAgeMs`: a view older than that is rebuilt.
 */
export interface ServiceView {
  readonly namespace: string;
  readonly service: string;
  /** The store's revision of the service's last change (0: never seen). */
  readonly revision: number;
  /** When the view was built (the clock's time): lease countdowns are as of then. */
  readonly builtAtMs: number;
  /** Served instances (lease live, or held by an eviction guard), every status, sorted by instance id. */
  readonly served: readonly StoredInstance[];
  /** `served` as the native API shows them, in the same order, as of `builtAtMs`. */
  readonly instances: readonly InstanceView[];
}

/** A change to one service, as the read layer announces it (synchronously, once per store change). */
export interface ServiceChange {
  namespace: string;
  service: string;
  /** The service's revision after the change. */
  revision: number;
}

export interface ServiceViewsComponents {
  clock: Pick<Clock, 'nowMs' | 'setInterval' | 'setTimeout'>;
  store: InstanceStore;
  /** The lease rules in force now (Registry.leaseView). */
  leaseView: () => LeaseView;
}

export interface ServiceViewsInit {
  /** Longest a view is served before it is rebuilt even without a change (lease countdowns). */
  maxAgeMs: number;
  /** Most expired views the sweep retires per turn; default `VIEW_SWEEP_SLICE` (tests set it low). */
  sweepSlice?: number;
}

/** The longest a view may lag in its time-dependent fields by default: one second. */
export const DEFAULT_VIEW_MAX_AGE_MS = 1_000;

interface Cached {
  view: ServiceView;
  stamp: Stamp;
  encodings: Map<string, unknown>;
  /** In the cache still: false once a change, a rebuild or the sweep replaced or dropped it. */
  current: boolean;
}

/** Most expired views the sweep retires in one turn of the event loop (see `dropExpired`). */
export const VIEW_SWEEP_SLICE = 10_000;

export class ServiceViews {
  private readonly cache = new Map<string, Map<string, Cached>>();
  /**
   * Each view's entry, found from the view itself: `encoding` is on every read's path, and
   * this spares it the service's identity and two map lookups (a view is only ever current
   * as the entry it was built in).
   */
  private readonly entryOf = new WeakMap<ServiceView, Cached>();
  private readonly listeners = new Set<(change: ServiceChange) => void>();
  private readonly unsubscribe: () => void;
  private readonly sweepTimer: TimerHandle;
  /** The sweep's next turn, while more expired than one turn retires. */
  private sweepMore: TimerHandle | undefined;
  private readonly stableViews: StableViews;
  /** `servicesOf`'s sorted names per namespace, as of `serviceNamesVersion` (the store's `servicesVersion`). */
  private readonly serviceNames = new Map<string, readonly string[]>();
  private serviceNamesVersion = -1;

  constructor(
    private readonly components: ServiceViewsComponents,
    private readonly init: ServiceViewsInit = { maxAgeMs: DEFAULT_VIEW_MAX_AGE_MS },
  ) {
    this.stableViews = new StableViews(components);
    this.unsubscribe = components.store.onChange((change) => this.onStoreChange(change));
    // A view older than maxAgeMs is never served again (the next read rebuilds it): give its
    // encodings back rather than keep every listed service's bytes until it changes.
    this.sweepTimer = components.clock.setInterval(() => this.dropExpired(), Math.max(this.init.maxAgeMs, 250));
  }

  /**
   * Drops the cached views (and their encodings) too old to be served again. A namespace's
   * views are kept in the order they were built (`cached` puts a rebuilt one last), so the
   * sweep stops at the first young one: it looks at what expired, not at every cached view. At
   * most `VIEW_SWEEP_SLICE` a turn, the rest in the next turns: after a reader of every service
   * (a wildcard watch, 200,000 services) they all expire together, and retiring them took one
   * turn of tens of ms every time.
   */
  private dropExpired(): void {
    this.sweepMore = undefined;
    const nowMs = this.components.clock.nowMs();
    let left = Math.max(1, this.init.sweepSlice ?? VIEW_SWEEP_SLICE);
    for (const [namespace, services] of this.cache) {
      for (const [identity, cached] of services) {
        if (nowMs - cached.view.builtAtMs < this.init.maxAgeMs) break;
        this.retire(namespace, services, identity);
        if (--left === 0) {
          this.sweepMore = this.components.clock.setTimeout(() => this.dropExpired(), 0);
          return;
        }
      }
    }
  }

  /**
   * The served instances of a service for encodings that do not move with time (Eureka
   * documents, watch frames, DNS, xDS): kept across the 1 s rebuilds of `get` while nothing
   * served could have changed (see stable-views.ts). `leases` lets a reader of many services
   * pass one lease view.
   */
  stable(namespace: string, service: string, leases?: LeaseView): StableView {
    return this.stableViews.get(namespace, service, leases);
  }

  /** A stable view's stamp while it is current (see stable-views.ts), for readers that keep what they build from many views. */
  stableStamp(view: StableView): Stamp | undefined {
    return this.stableViews.stampOf(view);
  }

  /**
   * The encoding `name` of a stable view, built on first use and shared while the view is
   * current and the encoding younger than `maxAgeMs` (default: no age bound).
   */
  stableEncoding<T>(view: StableView, name: string, build: (view: StableView) => T, maxAgeMs?: number): T {
    return this.stableViews.encoding(view, name, build, maxAgeMs, this.components.clock.nowMs());
  }

  /**
   * The key a reader indexes a service by (watch channels, per-service caches): the service's
   * identity as the store matches names (`serviceIdentity`: case-insensitive), so that every
   * reader follows the store. Never build such keys from request strings as they came.
   */
  keyOf(namespace: string, service: string): string {
    return `${namespace}/${serviceIdentity(service)}`;
  }

  /** The served state of one service now (an unknown service is an empty view). */
  get(namespace: string, service: string): ServiceView {
    return this.cached(namespace, service).view;
  }

  /**
   * The encoding `name` of a view (a protocol's bytes or objects for it): built by `build` on
   * the first call for this view, then shared. A view that is no longer current keeps the
   * encodings it had; readers holding it get what they were built from.
   */
  encoding<T>(view: ServiceView, name: string, build: (view: ServiceView) => T): T {
    const cached = this.entryOf.get(view);
    if (!cached?.current) return build(view);
    if (cached.encodings.has(name)) return cached.encodings.get(name) as T;
    const value = build(view);
    cached.encodings.set(name, value);
    return value;
  }

  /** The encoding `name` of the current view of a service (`get` then `encoding`). */
  encoded<T>(namespace: string, service: string, name: string, build: (view: ServiceView) => T): T {
    return this.encoding(this.get(namespace, service), name, build);
  }

  /**
   * The names of the services of a namespace that have at least one record, sorted. Kept per
   * namespace while no service is made or dropped (`store.servicesVersion`): every namespace-wide
   * reader (a wildcard watch or xDS push, a full fetch, a service list) starts here, and the list
   * and its sort are proportional to the services (23-34 ms at 200,000, every call, before).
   */
  servicesOf(namespace: string): readonly string[] {
    const { store } = this.components;
    if (this.serviceNamesVersion !== store.servicesVersion) {
      // A service was made or dropped somewhere: every namespace's list is built again on use.
      this.serviceNames.clear();
      this.serviceNamesVersion = store.servicesVersion;
    }
    let names = this.serviceNames.get(namespace);
    if (names === undefined) {
      const built: string[] = [];
      for (const entries of store.servicesIn(namespace)) built.push(entries.service);
      this.serviceNames.set(namespace, (names = built.sort()));
    }
    return names;
  }

  /** The revision of the service's last change (0: never seen), without building its view. */
  revisionOf(namespace: string, service: string): number {
    return this.components.store.getService(namespace, service)?.revision ?? 0;
  }

  /** The store's revision: it passes any revision of any service on every change. */
  get revision(): number {
    return this.components.store.revision;
  }

  /** Calls `listener` after every change to a service's records or visibility; returns the unsubscribe function. */
  onChange(listener: (change: ServiceChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops following the store (shutdown). */
  close(): void {
    this.unsubscribe();
    this.sweepTimer.cancel();
    this.sweepMore?.cancel();
    for (const services of this.cache.values()) for (const cached of services.values()) cached.current = false;
    this.cache.clear();
    this.stableViews.clear();
    this.listeners.clear();
  }

  private cached(namespace: string, service: string): Cached {
    let services = this.cache.get(namespace);
    const identity = serviceIdentity(service);
    const current = services?.get(identity);
    const revision = this.revisionOf(namespace, service);
    const nowMs = this.components.clock.nowMs();
    if (current && current.view.revision === revision && nowMs - current.view.builtAtMs < this.init.maxAgeMs && nowMs >= current.view.builtAtMs) {
      // What is served may also change with time alone (a lease ends, an owner goes down, a guard
      // turns on): then rebuild at once, so that only the countdown ever lags.
      if (stampHolds(current.stamp, this.components.leaseView())) return current;
    }
    const fresh = this.build(namespace, service, revision);
    if (current) {
      current.current = false;
      // Deleted first, so that the map stays in build order (dropExpired relies on it).
      services!.delete(identity);
    }
    if (!services) this.cache.set(namespace, (services = new Map()));
    services.set(identity, fresh);
    this.entryOf.set(fresh.view, fresh);
    return fresh;
  }

  private build(namespace: string, service: string, revision: number): Cached {
    const leases = this.components.leaseView();
    const entries = this.components.store.getService(namespace, service);
    const { served, stamp } = servedNow(entries?.instances.values() ?? [], leases);
    // The native views of the instances are made on first use: most encodings are written from
    // the records (instance-json.ts, the protocols), and 100,000 views would be 20-30 MB more.
    let instances: InstanceView[] | undefined;
    const view: ServiceView = {
      namespace,
      service: entries?.service ?? service,
      revision,
      builtAtMs: leases.nowMs,
      served,
      get instances() {
        return (instances ??= served.map((entry) => toInstanceView(entry, leases)));
      },
    };
    return { view, stamp, encodings: new Map(), current: true };
  }

  /** Drops a service's cached view: marked not current, so readers still holding it get uncached answers. */
  private retire(namespace: string, services: Map<string, Cached>, identity: string): void {
    const cached = services.get(identity);
    if (!cached) return;
    cached.current = false;
    services.delete(identity);
    if (services.size === 0) this.cache.delete(namespace);
  }

  private onStoreChange(change: StoreChange): void {
    const { namespace, service } = change.entry.record;
    // The cached view is now stale; drop it at once so its encodings are given back.
    const services = this.cache.get(namespace);
    if (services) this.retire(namespace, services, serviceIdentity(service));
    this.stableViews.invalidate(namespace, service);
    if (this.listeners.size === 0) return;
    const event: ServiceChange = { namespace, service, revision: change.entry.revision };
    for (const listener of this.listeners) listener(event);
  }
}
export type { StableView, Stamp } from './stable-views.js';
export { stampHolds, StampCombiner } from './stable-views.js';
