import { groupKey, type Channel, type Channels } from './channel.js';

/** What the wildcard index needs of a subscriber. */
export interface WildcardSubscriber<S> {
  readonly filter: { namespace: string; group?: string | null };
  /** The snapshots still to come, undefined once all were sent. */
  readonly snapshots: { ahead(service: string): boolean } | undefined;
  /** The channels it joined. */
  channels: Channel<S>[];
}

/**
 * The subscribers of every service of a namespace (present and future), by namespace and group.
 * A service made after a subscriber's list of names was taken reaches it here, on the service's
 * first change: its channel is made empty (all of it is `added`) and every wildcard subscriber
 * of the group joins it, but one whose snapshot of the service is still to come (that snapshot
 * shows the change, and it joins the channel then). `epoch` moves when a subscriber joins, so a
 * channel already in step with the namespace's wildcards costs one compare per change.
 */
export class Wildcards<S extends WildcardSubscriber<S>> {
  private readonly byNamespace = new Map<string, { epoch: number; byGroup: Map<string, Set<S>> }>();

  join(subscriber: S): void {
    const { namespace } = subscriber.filter;
    let wildcards = this.byNamespace.get(namespace);
    if (!wildcards) this.byNamespace.set(namespace, (wildcards = { epoch: 0, byGroup: new Map() }));
    wildcards.epoch += 1;
    const group = groupKey(subscriber.filter.group ?? null);
    let set = wildcards.byGroup.get(group);
    if (!set) wildcards.byGroup.set(group, (set = new Set()));
    set.add(subscriber);
  }

  leave(subscriber: S): void {
    const { namespace } = subscriber.filter;
    const wildcards = this.byNamespace.get(namespace);
    if (!wildcards) return;
    const group = groupKey(subscriber.filter.group ?? null);
    const set = wildcards.byGroup.get(group);
    if (set?.delete(subscriber) && set.size === 0) wildcards.byGroup.delete(group);
    if (wildcards.byGroup.size === 0) this.byNamespace.delete(namespace);
  }

  /** True when a wildcard subscriber watches `namespace` (a change there may reach one). */
  watches(namespace: string): boolean {
    return this.byNamespace.has(namespace);
  }

  /**
   * A change to a service (`key`, and `stored`: its name as stored, as the subscribers' lists
   * name it): the namespace's wildcard subscribers not in its channels yet join them, but those
   * with the service still ahead. While every one still has it ahead no channel is made (one made
   * empty would not agree with the snapshots to come), and the next change asks again.
   */
  reach(channels: Channels<S>, key: string, namespace: string, stored: string): void {
    const wildcards = this.byNamespace.get(namespace);
    if (!wildcards) return;
    for (const subscribers of wildcards.byGroup.values()) {
      const first = subscribers.values().next().value as S;
      const group = first.filter.group ?? null;
      let channel = channels.get(key, group);
      if (channel?.wildcardEpoch === wildcards.epoch) continue;
      for (const subscriber of subscribers) {
        if (channel?.subscribers.has(subscriber) || subscriber.snapshots?.ahead(stored)) continue;
        channel ??= channels.open(key, namespace, stored, group, []);
        channel.subscribers.add(subscriber);
        subscriber.channels.push(channel);
      }
      if (channel) channel.wildcardEpoch = wildcards.epoch;
    }
  }

  clear(): void {
    this.byNamespace.clear();
  }
}
