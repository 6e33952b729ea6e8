import type { Clock, TimerHandle } from '../clock/clock.js';
import { randomInt, type Rng } from '../clock/rng.js';
import { RegistryError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { Registry } from '../registry/registry.js';
import type { ServiceEntries, StoreChange } from '../registry/store.js';
import { toInstanceView, type InstanceView } from '../registry/view.js';
import { isServed } from '../registry/visibility.js';
import type { ServiceView, ServiceViews } from '../views/service-views.js';
import { Channel, coalesceDelayMs, QUIET_GATHER_MS } from './channel.js';
import { DROPPED_FRAME, WatchFrame, type SnapshotEvent, type WatchEvent } from './events.js';
import { FanOut } from './fan-out.js';

export type { DeltaEvent, DroppedEvent, SnapshotEvent, WatchEvent } from './events.js';
export { WatchFrame } from './events.js';

/**
 * Receives the events of one subscription; answers false when it cannot take more (its
 * connection's buffer is full), and the hub then drops it.
 */
export type WatchSink = (event: WatchEvent) => boolean;

/** As WatchSink, given the shared frame (the event and its encoded bytes). */
export type FrameSink = (frame: WatchFrame) => boolean;

export interface WatchFilter {
  namespace: string;
  /** Services to watch; null watches every service of the namespace (present and future). */
  services: string[] | null;
  /** Only instances of this group (an instance that leaves it is `removed`); null or absent: every group. */
  group?: string | null;
}

export interface WatchHubInit {
  /** Changes to a service that keep coming are gathered for up to this long (a quiet service is pushed at once). */
  coalesceMs: number;
  /** Most watch streams (plus long polls) at once on this peer; long polls have a budget of this many of their own. */
  maxWatchers: number;
}

/**
 * Told of each delta frame once it is written to every subscriber of its channel: how many
 * were written to, and when the first change of its window was made (the peer's clock), so a
 * push's delay from the change can be measured (the native adapter's metrics: issue 37).
 */
export interface PushObserver {
  pushed(changedAtMs: number, count: number): void;
}

export interface WatchStats {
  subscribers: number;
  longPolls: number;
  eventsSent: number;
  dropped: number;
}

interface Subscriber {
  filter: WatchFilter;
  sink: FrameSink;
  channels: Channel<Subscriber>[];
  closed: boolean;
  onClose: (() => void) | undefined;
}

interface Waiter {
  afterRevision: number;
  resolve: (changed: boolean) => void;
}

interface Pending {
  namespace: string;
  service: string;
  ids: Set<string>;
  timer: TimerHandle;
  /** When the first and the last change of the window came. */
  firstAtMs: number;
  lastAtMs: number;
  /** The service was quiet before the window: push once the burst pauses (see channel.ts). */
  quiet: boolean;
  /** The window is over but waits for the service's last frame to be written (see `due`). */
  due?: boolean;
}

/** A channel's group as a map key. */
const groupKey = (group: string | null) => (group === null ? '*' : `=${group}`);

/**
 * Change notification for one peer. Subscribers of the same (service, group) share one
 * channel (channel.ts): what they were told is kept once, each change window produces one
 * frame per channel, encoded once and written to every subscriber, and a new subscriber's
 * snapshot is the read layer's shared encoding of the service's view. A change to a service
 * quiet for `coalesceMs` is pushed at once; while changes keep coming they are gathered for at
 * most `coalesceMs`. Long polls wait here for a service's revision to pass an index. No I/O:
 * the HTTP layer writes frames to server-sent-event streams.
 */
export class WatchHub {
  /** Channels by service key (ServiceViews.keyOf), then by group. */
  private readonly channels = new Map<string, Map<string, Channel<Subscriber>>>();
  /** Subscribers of every service of a namespace, by group; `epoch` moves when one joins. */
  private readonly wildcards = new Map<string, { epoch: number; byGroup: Map<string, Set<Subscriber>> }>();
  private readonly pending = new Map<string, Pending>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** When each service last changed (keyed by the store's own object: it goes with the service). */
  private readonly lastChangeAtMs = new WeakMap<ServiceEntries, number>();
  private subscriberCount = 0;
  private waiterCount = 0;
  private readonly counters = { eventsSent: 0, dropped: 0 };
  /** Frames on their way to their subscribers, a slice per turn of the event loop (fan-out.ts). */
  private readonly fanOut: FanOut<Subscriber, WatchFrame>;
  private readonly unsubscribe: () => void;
  private closed = false;
  private readonly log: Logger;

  constructor(
    private readonly components: { clock: Clock; rng: Rng; registry: Registry; logger: Logger; views: ServiceViews; pushes?: PushObserver },
    private readonly init: WatchHubInit,
  ) {
    this.log = components.logger.child({ component: 'watch' });
    this.fanOut = new FanOut(components.clock, (subscriber, frame) => void this.deliver(subscriber, frame));
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
    return this.subscribeFrames(filter, (frame) => sink(frame.event), onClose);
  }

  /** `subscribe`, with the shared frames (what an SSE stream writes: `frame.bytes()`). */
  subscribeFrames(filter: WatchFilter, sink: FrameSink, onClose?: () => void): { close(): void } {
    this.admit();
    if (this.closed) {
      onClose?.();
      return { close: () => {} };
    }
    const subscriber: Subscriber = { filter, sink, channels: [], closed: false, onClose };
    this.subscriberCount += 1;
    const { namespace } = filter;
    const group = filter.group ?? null;
    if (filter.services === null) {
      let wildcards = this.wildcards.get(namespace);
      if (!wildcards) this.wildcards.set(namespace, (wildcards = { epoch: 0, byGroup: new Map() }));
      wildcards.epoch += 1;
      this.index(wildcards.byGroup, groupKey(group), subscriber);
    }
    for (const service of filter.services ?? this.components.views.servicesOf(namespace)) {
      const key = this.components.views.keyOf(namespace, service);
      // Changes not pushed yet go to the channel's present subscribers first, so that the
      // channel's state is the snapshot's.
      if (this.pending.has(key)) this.flush(key);
      const view = this.components.views.get(namespace, service);
      const snapshot = this.snapshotFrame(view, group);
      const channel = this.channel(key, view.namespace, view.service, group, (snapshot.event as SnapshotEvent).instances);
      channel.subscribers.add(subscriber);
      subscriber.channels.push(channel);
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
    this.admitLongPoll();
    const key = this.components.views.keyOf(namespace, service);
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
    this.fanOut.clear();
    for (const pending of this.pending.values()) pending.timer.cancel();
    this.pending.clear();
    const subscribers = new Set<Subscriber>();
    for (const groups of this.channels.values()) for (const channel of groups.values()) for (const s of channel.subscribers) subscribers.add(s);
    for (const wildcards of this.wildcards.values()) for (const set of wildcards.byGroup.values()) for (const s of set) subscribers.add(s);
    for (const subscriber of subscribers) this.remove(subscriber);
    for (const set of [...this.waiters.values()]) for (const waiter of [...set]) waiter.resolve(false);
  }

  /**
   * Throws REG_ERR_TOO_MANY_WATCHERS (429, Retry-After) when this peer serves as many watch
   * streams and long polls as it may. Long polls have their own budget (`admitLongPoll`), so
   * a refused stream can fall back to long polling the same peer (push-pull).
   */
  admit(): void {
    if (this.subscriberCount + this.waiterCount >= this.init.maxWatchers) {
      throw new RegistryError(
        'REG_ERR_TOO_MANY_WATCHERS',
        `this peer already serves ${this.init.maxWatchers} watchers; long-poll GET /v1/services/{service}?index=<X-Registry-Index> instead, ` +
          'and try the stream again after Retry-After',
        5,
      );
    }
  }

  /** Throws REG_ERR_TOO_MANY_WATCHERS when `maxWatchers` long polls already wait here. */
  admitLongPoll(): void {
    if (this.waiterCount >= this.init.maxWatchers) {
      throw new RegistryError('REG_ERR_TOO_MANY_WATCHERS', `this peer already serves ${this.init.maxWatchers} long polls; try later or another peer`, 5);
    }
  }

  private onChange(change: StoreChange): void {
    const { record } = change.entry;
    const nowMs = this.components.clock.nowMs();
    const entries = this.components.registry.store.getService(record.namespace, record.service);
    const previousMs = entries ? this.lastChangeAtMs.get(entries) : undefined;
    if (entries) this.lastChangeAtMs.set(entries, nowMs);
    const key = this.components.views.keyOf(record.namespace, record.service);
    const waiting = this.waiters.get(key);
    if (waiting) {
      for (const waiter of [...waiting]) if (change.entry.revision > waiter.afterRevision) waiter.resolve(true);
    }
    const wildcards = this.wildcards.get(record.namespace);
    if (wildcards) {
      // A service new to the namespace's watchers starts its channels empty: all of it is
      // `added`. A channel already in step with the namespace's wildcards costs one compare.
      for (const subscribers of wildcards.byGroup.values()) {
        const first = subscribers.values().next().value as Subscriber;
        const channel = this.channel(key, record.namespace, record.service, first.filter.group ?? null, []);
        if (channel.wildcardEpoch === wildcards.epoch) continue;
        channel.wildcardEpoch = wildcards.epoch;
        for (const subscriber of subscribers) {
          if (channel.subscribers.has(subscriber)) continue;
          channel.subscribers.add(subscriber);
          subscriber.channels.push(channel);
        }
      }
    }
    if (!this.channels.has(key)) return;
    let pending = this.pending.get(key);
    if (!pending) {
      const delayMs = coalesceDelayMs(previousMs, nowMs, this.init.coalesceMs);
      const timer = this.components.clock.setTimeout(() => this.due(key), delayMs);
      const quiet = previousMs === undefined || nowMs - previousMs >= this.init.coalesceMs;
      this.pending.set(key, (pending = { namespace: record.namespace, service: record.service, ids: new Set(), timer, firstAtMs: nowMs, lastAtMs: nowMs, quiet }));
    }
    pending.lastAtMs = nowMs;
    pending.ids.add(record.instanceId);
  }

  /**
   * A window's timer: a quiet service's window stays open while its burst goes on (a change
   * within the last QUIET_GATHER_MS), never past `coalesceMs` from its first change.
   */
  private due(key: string): void {
    const pending = this.pending.get(key);
    if (!pending) return;
    const nowMs = this.components.clock.nowMs();
    const untilMs = Math.min(pending.firstAtMs + this.init.coalesceMs, pending.lastAtMs + Math.min(QUIET_GATHER_MS, this.init.coalesceMs));
    if (pending.quiet && untilMs > nowMs) {
      pending.timer = this.components.clock.setTimeout(() => this.due(key), untilMs - nowMs);
      return;
    }
    // While the service's last frame is still being written (in slices), what changed since
    // waits and goes out as one frame once it is done: a frame per window while each took longer
    // than the window to write backed frames up behind each other (5,000 subscribers: a
    // 100-change burst reached the last of them 1.9 s after the last write).
    if (this.fanOut.sending(key)) {
      pending.due = true;
      return;
    }
    this.flush(key);
  }

  /** Sends what changed in the window to every channel of the service: one frame per channel. */
  private flush(key: string): void {
    const pending = this.pending.get(key);
    if (!pending) return;
    this.pending.delete(key);
    pending.timer.cancel();
    const groups = this.channels.get(key);
    if (!groups) return;
    const { registry } = this.components;
    const leases = registry.leaseView();
    const entries = registry.store.getService(pending.namespace, pending.service);
    const current = new Map<string, InstanceView>();
    for (const id of pending.ids) {
      const entry = entries?.instances.get(id);
      if (entry && isServed(entry, leases)) current.set(id, toInstanceView(entry, leases));
    }
    const revision = entries?.revision ?? 0;
    // A push that took time (a frame written to thousands of sockets, in slices) leaves the
    // service busy, not quiet: changes that came in meanwhile, or just after, are gathered for
    // up to `coalesceMs` from its end. Otherwise each change of a burst waited behind the push
    // before it, looked quiet, and was pushed on its own, which made the burst one push per
    // change (bench/read-scale.ts, 5,000 subscribers).
    const pushed = (startedMs: number, endedMs: number) => {
      if (entries && endedMs > startedMs) this.lastChangeAtMs.set(entries, Math.max(endedMs, this.lastChangeAtMs.get(entries) ?? 0));
      // A window that came due meanwhile goes out once the service's last frame is written.
      if (!this.fanOut.sending(key) && this.pending.get(key)?.due) this.flush(key);
    };
    for (const channel of [...groups.values()]) {
      const delta = channel.advance(pending.ids, current, revision);
      if (!delta) continue;
      const subscribers = [...channel.subscribers];
      const observer = this.components.pushes;
      const done = observer
        ? (startedMs: number, endedMs: number) => {
            observer.pushed(pending.firstAtMs, subscribers.length);
            pushed(startedMs, endedMs);
          }
        : pushed;
      this.fanOut.send(key, new WatchFrame(delta), subscribers, done);
    }
  }

  /** A service's snapshot for a group: built once per view and group, shared by every new subscriber. */
  private snapshotFrame(view: ServiceView, group: string | null): WatchFrame {
    return this.components.views.encoding(view, `sse-snapshot|${groupKey(group)}`, (built) => {
      const instances = group === null ? [...built.instances] : built.instances.filter((instance) => instance.group === group);
      return new WatchFrame({ type: 'snapshot', namespace: built.namespace, service: built.service, revision: built.revision, instances });
    });
  }

  private channel(key: string, namespace: string, service: string, group: string | null, instances: readonly InstanceView[]): Channel<Subscriber> {
    let groups = this.channels.get(key);
    if (!groups) this.channels.set(key, (groups = new Map()));
    let channel = groups.get(groupKey(group));
    if (!channel) {
      channel = new Channel<Subscriber>(key, namespace, service, group);
      channel.reset(instances);
      groups.set(groupKey(group), channel);
    }
    return channel;
  }

  private deliver(subscriber: Subscriber, frame: WatchFrame): boolean {
    if (subscriber.closed) return false;
    let accepted: boolean;
    try {
      accepted = subscriber.sink(frame);
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
      subscriber.sink(DROPPED_FRAME);
    } catch {
      // the connection is going anyway
    }
    this.remove(subscriber);
    return false;
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
    for (const channel of subscriber.channels) {
      channel.subscribers.delete(subscriber);
      if (channel.subscribers.size > 0) continue;
      const { key } = channel;
      const groups = this.channels.get(key);
      groups?.delete(groupKey(channel.group));
      if (groups?.size === 0) {
        this.channels.delete(key);
        const pending = this.pending.get(key);
        pending?.timer.cancel();
        this.pending.delete(key);
      }
    }
    subscriber.channels = [];
    const wildcards = this.wildcards.get(subscriber.filter.namespace);
    if (subscriber.filter.services === null && wildcards) {
      const group = groupKey(subscriber.filter.group ?? null);
      const set = wildcards.byGroup.get(group);
      if (set?.delete(subscriber) && set.size === 0) wildcards.byGroup.delete(group);
      if (wildcards.byGroup.size === 0) this.wildcards.delete(subscriber.filter.namespace);
    }
    subscriber.onClose?.();
  }
}
