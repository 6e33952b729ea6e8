import type { Clock, TimerHandle } from '../clock/clock.js';
import type { Rng } from '../clock/rng.js';
import { RegistryError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { Registry } from '../registry/registry.js';
import type { ServiceEntries, StoreChange } from '../registry/store.js';
import { toInstanceView, type InstanceView } from '../registry/view.js';
import { isServed } from '../registry/visibility.js';
import type { ServiceView, ServiceViews } from '../views/service-views.js';
import { Channel, Channels, coalesceDelayMs, groupKey, QUIET_GATHER_MS } from './channel.js';
import { DROPPED_FRAME, WatchFrame, type SnapshotEvent, type WatchEvent } from './events.js';
import { FanOut } from './fan-out.js';
import { LongPolls } from './long-polls.js';
import { DETACH_UNITS, SnapshotCursor, snapshotUnits } from './snapshots.js';
import type { FrameSink, SnapshotPace, WatchFilter, WatchSink, WatchSubscription } from './subscription.js';
import { Turns, type TurnJob } from './turns.js';
import { Wildcards } from './wildcards.js';

export type { DeltaEvent, DroppedEvent, SnapshotEvent, WatchEvent } from './events.js';
export { WatchFrame } from './events.js';
export type { FrameSink, SnapshotPace, WatchFilter, WatchSink, WatchSubscription } from './subscription.js';

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
  /** The channels it joined (a channel at most once); a closed subscriber leaves them in turns. */
  channels: Channel<Subscriber>[];
  closed: boolean;
  onClose: (() => void) | undefined;
  /** The services whose snapshots are still to come; undefined once every one was sent. */
  snapshots: SnapshotCursor | undefined;
  /** Its queued work (snapshots, then leaving its channels once closed). */
  job: TurnJob | undefined;
  pace: SnapshotPace | undefined;
  /** Its snapshots wait for the reader (`pace.ready()` said no) until `resume()`. */
  paused: boolean;
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

/**
 * Change notification for one peer. Subscribers of the same (service, group) share one
 * channel (channel.ts): what they were told is kept once, each change window produces one
 * frame per channel, encoded once and written to every subscriber, and a new subscriber's
 * snapshot is the read layer's shared encoding of the service's view. A change to a service
 * quiet for `coalesceMs` is pushed at once; while changes keep coming they are gathered for at
 * most `coalesceMs`. Work proportional to a namespace (a wildcard subscription's snapshots, a
 * closed subscriber leaving its channels) goes a bounded amount per turn of the event loop
 * (turns.ts). Long polls wait here for a service's revision to pass an index (long-polls.ts).
 * No I/O: the HTTP layer writes frames to server-sent-event streams.
 */
export class WatchHub {
  private readonly channels = new Channels<Subscriber>();
  /** Subscribers of every service of a namespace (wildcards.ts). */
  private readonly wildcards = new Wildcards<Subscriber>();
  private readonly pending = new Map<string, Pending>();
  private readonly longPolls: LongPolls;
  /** When each service last changed (keyed by the store's own object: it goes with the service). */
  private readonly lastChangeAtMs = new WeakMap<ServiceEntries, number>();
  private readonly subscribers = new Set<Subscriber>();
  private readonly counters = { eventsSent: 0, dropped: 0 };
  /** Frames on their way to their subscribers, a slice per turn of the event loop (fan-out.ts). */
  private readonly fanOut: FanOut<Subscriber, WatchFrame>;
  /** Snapshots and detaching, bounded per turn of the event loop, all subscriptions together (turns.ts). */
  private readonly turns: Turns;
  private readonly unsubscribe: () => void;
  private closed = false;
  private readonly log: Logger;

  constructor(
    private readonly components: { clock: Clock; rng: Rng; registry: Registry; logger: Logger; views: ServiceViews; pushes?: PushObserver },
    private readonly init: WatchHubInit,
  ) {
    this.log = components.logger.child({ component: 'watch' });
    this.fanOut = new FanOut(components.clock, (subscriber, frame) => void this.deliver(subscriber, frame));
    this.turns = new Turns(components.clock);
    this.longPolls = new LongPolls(components);
    this.unsubscribe = components.registry.store.onChange((change) => this.onChange(change));
  }

  stats(): WatchStats {
    return { subscribers: this.subscribers.size, longPolls: this.longPolls.size, ...this.counters };
  }

  /** Channels held now (one per watched service and group), for tests and figures. */
  get openChannels(): number {
    return this.channels.size;
  }

  /**
   * Starts a subscription: one snapshot per watched service, then deltas. The snapshots go out
   * in turns of the event loop (turns.ts), the first turn's at once, in the caller's turn: a
   * subscription of up to about TURN_UNITS instances gets all its snapshots before this returns;
   * a wildcard watch of a large namespace gets the rest in later turns, while heartbeats are
   * answered between them. Each service's snapshot agrees with the deltas after it: a change to
   * a service whose snapshot is still to come is in that snapshot, never in a delta before it.
   * Throws REG_ERR_TOO_MANY_WATCHERS when the peer's limit is reached.
   */
  subscribe(filter: WatchFilter, sink: WatchSink, onClose?: () => void, pace?: SnapshotPace): WatchSubscription {
    return this.subscribeFrames(filter, (frame) => sink(frame.event), onClose, pace);
  }

  /** `subscribe`, with the shared frames (what an SSE stream writes: `frame.bytes()`). */
  subscribeFrames(filter: WatchFilter, sink: FrameSink, onClose?: () => void, pace?: SnapshotPace): WatchSubscription {
    this.admit();
    if (this.closed) {
      onClose?.();
      return { close: () => {}, resume: () => {} };
    }
    const { namespace } = filter;
    // A wildcard's list is the namespace's names now; a service made after this is told by the
    // wildcard mechanism (onChange), never by this list: each service reaches it exactly once.
    const snapshots = filter.services === null ? new SnapshotCursor(this.components.views.servicesOf(namespace), true) : new SnapshotCursor(filter.services, false);
    const subscriber: Subscriber = { filter, sink, channels: [], closed: false, onClose, snapshots, job: undefined, pace, paused: false };
    this.subscribers.add(subscriber);
    if (filter.services === null) this.wildcards.join(subscriber);
    const cost = (service: string) => this.snapshotCost(namespace, service);
    const job: TurnJob = {
      get nextUnits() {
        const next = subscriber.snapshots?.nextService;
        return next === undefined ? 0 : cost(next);
      },
      run: (units) => this.sendSnapshots(subscriber, units),
      // Done for now while paused: out of the turns until `resume` queues it again.
      get done() {
        return subscriber.closed || subscriber.snapshots === undefined || subscriber.paused;
      },
    };
    subscriber.job = job;
    this.turns.start(job);
    return {
      close: () => this.remove(subscriber),
      resume: () => {
        if (!subscriber.paused || subscriber.closed) return;
        subscriber.paused = false;
        this.turns.queue(job);
      },
    };
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
    return this.longPolls.wait(key, afterRevision, waitMs, signal);
  }

  /** Ends every subscription and long poll (shutdown). */
  closeAll(): void {
    this.closed = true;
    this.unsubscribe();
    this.fanOut.clear();
    this.turns.clear();
    for (const pending of this.pending.values()) pending.timer.cancel();
    this.pending.clear();
    // Every channel goes at once: nothing is left to leave them in turns.
    const subscribers = [...this.subscribers];
    this.subscribers.clear();
    this.channels.clear();
    this.wildcards.clear();
    for (const subscriber of subscribers) {
      subscriber.closed = true;
      subscriber.snapshots = undefined;
      subscriber.channels = [];
      subscriber.onClose?.();
    }
    this.longPolls.closeAll();
  }

  /**
   * Throws REG_ERR_TOO_MANY_WATCHERS (429, Retry-After) when this peer serves as many watch
   * streams and long polls as it may. Long polls have their own budget (`admitLongPoll`), so
   * a refused stream can fall back to long polling the same peer (push-pull).
   */
  admit(): void {
    if (this.subscribers.size + this.longPolls.size >= this.init.maxWatchers) {
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
    if (this.longPolls.size >= this.init.maxWatchers) {
      throw new RegistryError('REG_ERR_TOO_MANY_WATCHERS', `this peer already serves ${this.init.maxWatchers} long polls; try later or another peer`, 5);
    }
  }

  private onChange(change: StoreChange): void {
    const { record } = change.entry;
    const nowMs = this.components.clock.nowMs();
    const entries = this.components.registry.store.getService(record.namespace, record.service);
    const previousMs = entries ? this.lastChangeAtMs.get(entries) : undefined;
    if (entries) this.lastChangeAtMs.set(entries, nowMs);
    // Nobody to tell (no long poll, channel or wildcard watch of the namespace): the service's
    // key is not made (a string and its hash per write, on a peer nobody watches).
    if (this.longPolls.size === 0 && this.channels.size === 0 && !this.wildcards.watches(record.namespace)) return;
    const key = this.components.views.keyOf(record.namespace, record.service);
    this.longPolls.notify(key, change.entry.revision);
    // A service new to the namespace's wildcard subscribers reaches them (wildcards.ts).
    this.wildcards.reach(this.channels, key, record.namespace, entries?.service ?? record.service);
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
    const channels = this.channels.of(key);
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
    for (const channel of channels) {
      const delta = channel.advance(pending.ids, current, revision);
      if (!delta) continue;
      // A closed subscriber still in the channel (it leaves its channels in turns) is not written to.
      const subscribers: Subscriber[] = [];
      for (const subscriber of channel.subscribers) if (!subscriber.closed) subscribers.push(subscriber);
      if (subscribers.length === 0) continue;
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

  /** What a service's snapshot costs a turn (snapshots.ts: by its instances). */
  private snapshotCost(namespace: string, service: string): number {
    return snapshotUnits(this.components.registry.store.getService(namespace, service)?.instances.size ?? 0);
  }

  /**
   * Sends the subscriber the snapshots of its next services, for about `units` (at least one
   * service); the units spent. A service joins the subscriber to its channel as it sends the
   * snapshot, so the deltas it hears of a service are all after that service's snapshot.
   */
  private sendSnapshots(subscriber: Subscriber, units: number): number {
    const cursor = subscriber.snapshots;
    if (!cursor) return 0;
    const { views, registry } = this.components;
    const { namespace } = subscriber.filter;
    const group = subscriber.filter.group ?? null;
    let spent = 0;
    while (!cursor.done && !subscriber.closed) {
      if (subscriber.pace && !subscriber.pace.ready()) {
        subscriber.paused = true;
        break;
      }
      const service = cursor.nextService!;
      const cost = this.snapshotCost(namespace, service);
      if (spent > 0 && spent + cost > units) break;
      cursor.next += 1;
      spent += cost;
      const key = views.keyOf(namespace, service);
      // Already joined: named twice in another case, or a service of the list dropped and made
      // again (in another case) before its turn, which the wildcard mechanism told as new.
      if (this.channels.get(key, group)?.subscribers.has(subscriber)) continue;
      // Changes not pushed yet go to the channel's present subscribers first, so that the
      // channel's state is the snapshot's. A service dropped since the list was made gets an
      // empty snapshot, as a named service that does not exist does.
      if (this.pending.has(key)) this.flush(key);
      const view = views.get(namespace, service);
      const snapshot = this.snapshotFrame(view, group);
      const channel = this.channels.open(key, view.namespace, view.service, group, (snapshot.event as SnapshotEvent).instances);
      channel.subscribers.add(subscriber);
      subscriber.channels.push(channel);
      if (!this.deliver(subscriber, snapshot)) break;
    }
    if (cursor.done) subscriber.snapshots = undefined;
    return spent;
  }

  /** A service's snapshot for a group: built once per view and group, shared by every new subscriber. */
  private snapshotFrame(view: ServiceView, group: string | null): WatchFrame {
    return this.components.views.encoding(view, `sse-snapshot|${groupKey(group)}`, (built) => {
      const instances = group === null ? [...built.instances] : built.instances.filter((instance) => instance.group === group);
      return new WatchFrame({ type: 'snapshot', namespace: built.namespace, service: built.service, revision: built.revision, instances });
    });
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

  /**
   * Ends a subscription at once (no sink call after this, its queued snapshots dropped, onClose
   * told) and takes it out of its channels in turns: a wildcard subscriber of 200,000 services
   * is in 200,000 channels, which took 1.4 s in one turn. What this call does itself is bounded
   * by one turn's units; the rest is queued work, proportional to the channels it holds.
   */
  private remove(subscriber: Subscriber): void {
    if (subscriber.closed) return;
    subscriber.closed = true;
    this.subscribers.delete(subscriber);
    subscriber.snapshots = undefined;
    if (subscriber.job) this.turns.cancel(subscriber.job);
    if (subscriber.filter.services === null) this.wildcards.leave(subscriber);
    const job: TurnJob = {
      nextUnits: DETACH_UNITS,
      run: (units) => this.leaveChannels(subscriber, units),
      get done() {
        return subscriber.channels.length === 0;
      },
    };
    subscriber.job = job;
    this.turns.start(job);
    subscriber.onClose?.();
  }

  /** Takes a closed subscriber out of its last channels, for about `units`; the units spent. */
  private leaveChannels(subscriber: Subscriber, units: number): number {
    let spent = 0;
    while (spent < units) {
      const channel = subscriber.channels.pop();
      if (!channel) break;
      spent += DETACH_UNITS;
      if (!this.channels.leave(channel, subscriber)) continue;
      // No channel left for the service: its window has nobody to go to.
      this.pending.get(channel.key)?.timer.cancel();
      this.pending.delete(channel.key);
    }
    return spent;
  }
}
