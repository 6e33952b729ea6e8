import type { InstanceView } from '../registry/view.js';
import type { DeltaEvent } from './events.js';

/** What identifies a served state of an instance: its version and whether it is held. */
export function fingerprint(view: InstanceView): string {
  return `${view.version}|${view.evictionHeld ? 1 : 0}`;
}

/**
 * What every subscriber of one (service, group) has been told: instance id to fingerprint.
 * All of a channel's subscribers are told the same thing (a new one joins with a snapshot of
 * the state the channel is in), so the channel keeps this once, whatever its number of
 * subscribers: a subscriber costs its connection and its place in the channel's set.
 */
export class Channel<S> {
  readonly subscribers = new Set<S>();
  private readonly told = new Map<string, string>();
  /** The namespace's wildcard generation this channel has taken its wildcard subscribers from (-1: none yet). */
  wildcardEpoch = -1;

  constructor(
    /** The service's key (ServiceViews.keyOf). */
    readonly key: string,
    readonly namespace: string,
    readonly service: string,
    readonly group: string | null,
  ) {}

  /** Starts the channel from what a snapshot showed (only when it has no subscriber yet). */
  reset(instances: readonly InstanceView[]): void {
    this.told.clear();
    for (const view of instances) this.told.set(view.instanceId, fingerprint(view));
  }

  /**
   * The delta from what was told to `current` for the instances `ids` (current: the served
   * views of the dirty instances; an id absent from it is no longer served), and the channel
   * now holds the new state. Null when nothing this channel shows changed.
   */
  advance(ids: Iterable<string>, current: ReadonlyMap<string, InstanceView>, revision: number): DeltaEvent | null {
    const delta: DeltaEvent = { type: 'delta', namespace: this.namespace, service: this.service, revision, added: [], changed: [], removed: [] };
    for (const id of ids) {
      const found = current.get(id);
      const now = found && (this.group === null || found.group === this.group) ? found : undefined;
      const before = this.told.get(id);
      if (!now) {
        if (before !== undefined) {
          delta.removed.push({ instanceId: id });
          this.told.delete(id);
        }
      } else if (before === undefined) {
        delta.added.push(now);
        this.told.set(id, fingerprint(now));
      } else if (before !== fingerprint(now)) {
        delta.changed.push(now);
        this.told.set(id, fingerprint(now));
      }
    }
    return delta.added.length + delta.changed.length + delta.removed.length === 0 ? null : delta;
  }
}

/**
 * How long a change to a quiet service waits before it is pushed, and how long its window
 * stays open after each further change: one timer tick, so that the writes of one burst
 * arriving together (a replicated batch, applied in one turn; registrations a moment apart)
 * go out as one frame, and nothing more: a quiet service is pushed at once (issue 16: the
 * 15 ms this was took half of the 30 ms budget from a register on one peer to the event on a
 * watcher of another). Never past `coalesceMs` in all.
 */
export const QUIET_GATHER_MS = 1;

/**
 * How long to gather a change before pushing it (pure). A service quiet for `coalesceMs`
 * (or never changed) is pushed at once (after `QUIET_GATHER_MS`); while changes keep coming
 * they are gathered, for at most `coalesceMs` after the change before them.
 */
export function coalesceDelayMs(previousChangeAtMs: number | undefined, nowMs: number, coalesceMs: number): number {
  const quietMs = Math.min(coalesceMs, QUIET_GATHER_MS);
  if (previousChangeAtMs === undefined) return quietMs;
  return Math.min(coalesceMs, Math.max(quietMs, previousChangeAtMs + coalesceMs - nowMs));
}

/** A channel's group as a map key. */
export const groupKey = (group: string | null): string => (group === null ? '*' : `=${group}`);

/** The channels of every watched service: by service key (ServiceViews.keyOf), then by group. */
export class Channels<S> {
  private readonly byKey = new Map<string, Map<string, Channel<S>>>();
  private count = 0;

  /** Channels held. */
  get size(): number {
    return this.count;
  }

  /** Whether the service has a channel. */
  has(key: string): boolean {
    return this.byKey.has(key);
  }

  get(key: string, group: string | null): Channel<S> | undefined {
    return this.byKey.get(key)?.get(groupKey(group));
  }

  /** The service's channels, every group. */
  of(key: string): Channel<S>[] {
    const groups = this.byKey.get(key);
    return groups ? [...groups.values()] : [];
  }

  /** The service's channel for `group`, made and started from `instances` when there is none. */
  open(key: string, namespace: string, service: string, group: string | null, instances: readonly InstanceView[]): Channel<S> {
    let groups = this.byKey.get(key);
    if (!groups) this.byKey.set(key, (groups = new Map()));
    let channel = groups.get(groupKey(group));
    if (!channel) {
      channel = new Channel<S>(key, namespace, service, group);
      channel.reset(instances);
      groups.set(groupKey(group), channel);
      this.count += 1;
    }
    return channel;
  }

  /**
   * Takes `subscriber` out of `channel`, and the channel out once it has no subscriber left;
   * true when the service then has no channel at all.
   */
  leave(channel: Channel<S>, subscriber: S): boolean {
    channel.subscribers.delete(subscriber);
    if (channel.subscribers.size > 0) return false;
    const groups = this.byKey.get(channel.key);
    if (groups?.get(groupKey(channel.group)) !== channel) return false;
    groups.delete(groupKey(channel.group));
    this.count -= 1;
    if (groups.size > 0) return false;
    this.byKey.delete(channel.key);
    return true;
  }

  clear(): void {
    this.byKey.clear();
    this.count = 0;
  }
}
