import type { Clock, TimerHandle } from '../clock/clock.js';
import { randomInt, type Rng } from '../clock/rng.js';
import { RegistryError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { Registry } from '../registry/registry.js';
import type { StoreChange } from '../registry/store.js';
import { groupOf, serviceKeyString } from '../registry/types.js';
import { toInstanceView, type InstanceView } from '../registry/view.js';
import { isServed } from '../registry/visibility.js';

/** The first event of a subscription, one per service: everything served now. */
export interface SnapshotEvent {
  type: 'snapshot';
  namespace: string;
  service: string;
  revision: number;
  instances: InstanceView[];
}

/** What changed in one service since the last event, coalesced over the window. */
export interface DeltaEvent {
  type: 'delta';
  namespace: string;
  service: string;
  revision: number;
  added: InstanceView[];
  changed: InstanceView[];
  removed: { instanceId: string }[];
}

/** The subscriber fell too far behind and is dropped; it should reconnect (and get a new snapshot). */
export interface DroppedEvent {
  type: 'dropped';
  code: 'REG_ERR_WATCH_TOO_SLOW';
  message: string;
}

export type WatchEvent = SnapshotEvent | DeltaEvent | DroppedEvent;

/**
 * Receives the events of one subscription; answers false when it cannot take more (its
 * connection's buffer is full), and the hub then drops it.
 */
export type WatchSink = (event: WatchEvent) => boolean;

export interface WatchFilter {
  namespace: string;
  /** Services to watch; null watches every service of the namespace (present and future). */
  services: string[] | null;
  /** Only instances of this group (an instance that leaves it is `removed`); null or absent: every group. */
  group?: string | null;
}

export interface WatchHubInit {
  /** Changes within this window reach a subscriber as one event per service. */
  coalesceMs: number;
  /** Most subscriptions plus long polls at once on this peer. */
  maxWatchers: number;
}

export interface WatchStats {
  subscribers: number;
  longPolls: number;
  eventsSent: number;
  dropped: number;
}

interface Subscriber {
  filter: WatchFilter;
  sink: WatchSink;
  /** What this subscriber was last told, per service: instance id -> fingerprint. */
  sent: Map<string, Map<string, string>>;
  closed: boolean;
  onClose: (() => void) | undefined;
}

interface Waiter {
  afterRevision: number;
  resolve: (changed: boolean) => void;
}

/** What identifies a served state of an instance: its version and whether it is held. */
function fingerprint(view: InstanceView): string {
  return `${view.version}|${view.evictionHeld ? 1 : 0}`;
}

/**
 * Change notification for one peer. Every change of the store (local writes, replicated and
 * anti-entropy writes, visibility changes) marks its instance dirty; every `coalesceMs` the
 * dirty instances are compared with what each subscriber was last told, and each subscriber
 * gets at most one delta per service: a burst of changes is one push. Long polls wait here
 * for a service's revision to pass a given index. No I/O: the HTTP layer adapts sinks to
 * server-sent events.
 */
export class WatchHub {
  private readonly byService = new Map<string, Set<Subscriber>>();
  private readonly byNamespace = new Map<string, Set<Subscriber>>();
  private readonly dirty = new Map<string, Set<string>>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private flushTimer: TimerHandle | undefined;
  private subscriberCount = 0;
  private waiterCount = 0;
  private readonly counters = { eventsSent: 0, dropped: 0 };
  private readonly unsubscribe: () => void;
  private closed = false;
  private readonly log: Logger;

  constructor(
    private readonly components: { clock: Clock; rng: Rng; registry: Registry; logger: Logger },
    private readonly init: WatchHubInit,
  ) {
    this.log = components.logger.child({ component: 'watch' });
    this.unsubscribe = components.registry.store.onChange((change) => this.onChange(change));
  }

  stats(): WatchStats {
    return { subscribers: this.subscriberCount, longPolls: this.waiterCount, ...this.counters };
  }

  /**
   * Starts a subscription: one snapshot per watched service at once, then deltas. Throws
   * REG_ERR_TOO_MANY_WATCHERS when the peer's limit is reached.
   */
  subscribe(filter: WatchFilter, sink: WatchSink, onClose?: () => void): { close(): void } {
    this.admit();
    if (this.closed) {
      onClose?.();
      return { close: () => {} };
    }
    const subscriber: Subscriber = { filter, sink, sent: new Map(), closed: false, onClose };
    this.subscriberCount += 1;
    if (filter.services === null) this.index(this.byNamespace, filter.namespace, subscriber);
    else for (const service of filter.services) this.index(this.byService, serviceKeyString(filter.namespace, service), subscriber);
    const services = filter.services ?? this.servicesOf(filter.namespace);
    for (const service of services) {
      const snapshot = this.snapshot(filter.namespace, service, filter.group ?? null);
      subscriber.sent.set(serviceKeyString(filter.namespace, service), new Map(snapshot.instances.map((view) => [view.instanceId, fingerprint(view)])));
      if (!this.deliver(subscriber, snapshot)) break;
    }
    return { close: () => this.remove(subscriber) };
  }

  /**
   * Resolves true as soon as the service's revision passes `afterRevision`, or false after
   * `waitMs` (plus a random extra of up to 1/16, so that many pollers do not wake together).
   */
  waitForChange(namespace: string, service: string, afterRevision: number, waitMs: number, signal?: AbortSignal): Promise<boolean> {
    const current = this.components.registry.store.getService(namespace, service)?.revision ?? 0;
    if (current > afterRevision) return Promise.resolve(true);
    if (this.closed || signal?.aborted) return Promise.resolve(false);
    this.admit();
    const key = serviceKeyString(namespace, service);
    return new Promise((resolve) => {
      let timer: TimerHandle | undefined;
      const waiter: Waiter = {
        afterRevision,
        resolve: (changed) => {
          timer?.cancel();
          const set = this.waiters.get(key);
          if (set?.delete(waiter)) this.waiterCount -= 1;
          if (set?.size === 0) this.waiters.delete(key);
          resolve(changed);
        },
      };
      this.index(this.waiters, key, waiter);
      this.waiterCount += 1;
      const extraMs = randomInt(this.components.rng, Math.floor(waitMs / 16) + 1);
      timer = this.components.clock.setTimeout(() => waiter.resolve(false), waitMs + extraMs);
      signal?.addEventListener('abort', () => waiter.resolve(false), { once: true });
    });
  }

  /** Ends every subscription and long poll (shutdown). */
  closeAll(): void {
    this.closed = true;
    this.unsubscribe();
    this.flushTimer?.cancel();
    this.flushTimer = undefined;
    for (const set of [...this.byService.values(), ...this.byNamespace.values()]) {
      for (const subscriber of set) this.remove(subscriber);
    }
    for (const set of [...this.waiters.values()]) for (const waiter of [...set]) waiter.resolve(false);
  }

  /** Throws REG_ERR_TOO_MANY_WATCHERS (429) when this peer serves as many watchers as it may. */
  admit(): void {
    if (this.subscriberCount + this.waiterCount >= this.init.maxWatchers) {
      throw new RegistryError(
        'REG_ERR_TOO_MANY_WATCHERS',
        `this peer already serves ${this.init.maxWatchers} watchers; try later or another peer`,
        5,
      );
    }
  }

  private onChange(change: StoreChange): void {
    const { record } = change.entry;
    const key = serviceKeyString(record.namespace, record.service);
    const waiting = this.waiters.get(key);
    if (waiting) {
      for (const waiter of [...waiting]) if (change.entry.revision > waiter.afterRevision) waiter.resolve(true);
    }
    if (!this.byService.has(key) && !this.byNamespace.has(record.namespace)) return;
    let ids = this.dirty.get(key);
    if (!ids) this.dirty.set(key, (ids = new Set()));
    ids.add(record.instanceId);
    this.flushTimer ??= this.components.clock.setTimeout(() => this.flush(), this.init.coalesceMs);
  }

  /** Sends what changed in the window to every subscriber concerned. */
  private flush(): void {
    this.flushTimer = undefined;
    const { registry } = this.components;
    const view = registry.leaseView();
    const dirty = [...this.dirty];
    this.dirty.clear();
    for (const [key, ids] of dirty) {
      const entries = registry.store.getService(...splitServiceKey(key));
      const current = new Map<string, InstanceView>();
      for (const id of ids) {
        const entry = entries?.instances.get(id);
        if (entry && isServed(entry, view)) current.set(id, toInstanceView(entry, view));
      }
      const [namespace, identity] = splitServiceKey(key);
      // The key holds the service's identity (lower-cased); events name it as it is stored.
      const service = entries?.service ?? identity;
      const subscribers = [...(this.byService.get(key) ?? []), ...(this.byNamespace.get(namespace) ?? [])];
      for (const subscriber of subscribers) {
        if (subscriber.closed) continue;
        const delta = this.deltaFor(subscriber, key, ids, current);
        if (delta.added.length + delta.changed.length + delta.removed.length === 0) continue;
        this.deliver(subscriber, { type: 'delta', namespace, service, revision: entries?.revision ?? 0, ...delta });
      }
    }
  }

  private deltaFor(
    subscriber: Subscriber,
    key: string,
    ids: Set<string>,
    current: Map<string, InstanceView>,
  ): Pick<DeltaEvent, 'added' | 'changed' | 'removed'> {
    let sent = subscriber.sent.get(key);
    if (!sent) subscriber.sent.set(key, (sent = new Map()));
    const delta: Pick<DeltaEvent, 'added' | 'changed' | 'removed'> = { added: [], changed: [], removed: [] };
    const group = subscriber.filter.group ?? null;
    for (const id of ids) {
      const found = current.get(id);
      const now = found && (group === null || found.group === group) ? found : undefined;
      const before = sent.get(id);
      if (!now) {
        if (before !== undefined) {
          delta.removed.push({ instanceId: id });
          sent.delete(id);
        }
      } else if (before === undefined) {
        delta.added.push(now);
        sent.set(id, fingerprint(now));
      } else if (before !== fingerprint(now)) {
        delta.changed.push(now);
        sent.set(id, fingerprint(now));
      }
    }
    return delta;
  }

  private deliver(subscriber: Subscriber, event: WatchEvent): boolean {
    if (subscriber.closed) return false;
    let accepted: boolean;
    try {
      accepted = subscriber.sink(event);
    } catch {
      accepted = false;
    }
    if (accepted) {
      this.counters.eventsSent += 1;
      return true;
    }
    this.counters.dropped += 1;
    this.log.warn({ namespace: subscriber.filter.namespace }, 'watch subscriber too slow; dropped');
    try {
      subscriber.sink({ type: 'dropped', code: 'REG_ERR_WATCH_TOO_SLOW', message: 'this subscriber fell behind and was dropped; reconnect for a new snapshot' });
    } catch {
      // the connection is going anyway
    }
    this.remove(subscriber);
    return false;
  }

  private snapshot(namespace: string, service: string, group: string | null): SnapshotEvent {
    const { registry } = this.components;
    const view = registry.leaseView();
    const entries = registry.store.getService(namespace, service);
    const instances: InstanceView[] = [];
    for (const entry of entries?.instances.values() ?? []) {
      if (isServed(entry, view) && (group === null || groupOf(entry.record.data) === group)) instances.push(toInstanceView(entry, view));
    }
    instances.sort((a, b) => (a.instanceId < b.instanceId ? -1 : a.instanceId > b.instanceId ? 1 : 0));
    return { type: 'snapshot', namespace, service, revision: entries?.revision ?? 0, instances };
  }

  private servicesOf(namespace: string): string[] {
    const out: string[] = [];
    for (const entries of this.components.registry.store.allServices()) if (entries.namespace === namespace) out.push(entries.service);
    return out.sort();
  }

  private index<T>(map: Map<string, Set<T>>, key: string, item: T): void {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(item);
  }

  private remove(subscriber: Subscriber): void {
    if (subscriber.closed) return;
    subscriber.closed = true;
    this.subscriberCount -= 1;
    const { namespace, services } = subscriber.filter;
    const unindex = (map: Map<string, Set<Subscriber>>, key: string) => {
      const set = map.get(key);
      set?.delete(subscriber);
      if (set?.size === 0) map.delete(key);
    };
    if (services === null) unindex(this.byNamespace, namespace);
    else for (const service of services) unindex(this.byService, serviceKeyString(namespace, service));
    subscriber.onClose?.();
  }
}

function splitServiceKey(key: string): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}
