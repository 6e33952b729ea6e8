import type { ChangedIds, DiscoveryCache } from './cache.js';
import type { ClientLogger } from './logger.js';
import { applyTransitions, diffAvailable, isEmpty, sortedById, type Transitions } from './transitions.js';
import type { Instance, SubscribeHandlers, Subscription } from './types.js';

interface Subscriber {
  service: string;
  handlers: SubscribeHandlers;
  /** The available instances this subscriber was told about, by id. */
  known: Map<string, Instance>;
  closed: boolean;
}

/**
 * `subscribe()` callbacks, derived from the cache's changes. Each subscriber keeps what it was
 * told, and every change is the difference between that and the cache: so each transition
 * reaches each subscriber exactly once and in order, a late subscriber first hears the
 * instances already up, and a stream that reconnects causes no callback at all unless the
 * new peer's snapshot really differs (an instance missing from it is down; one merely not
 * heard about during the reconnection is not).
 */
export class Subscribers {
  private readonly byService = new Map<string, Set<Subscriber>>();
  private readonly log: ClientLogger;

  constructor(
    private readonly cache: DiscoveryCache,
    logger: ClientLogger,
  ) {
    this.log = logger.child({ component: 'subscribers' });
    cache.onChange((service, ids) => this.changed(service, ids));
  }

  add(service: string, handlers: SubscribeHandlers): Subscription {
    const subscriber: Subscriber = { service, handlers, known: new Map(), closed: false };
    let set = this.byService.get(service);
    if (!set) this.byService.set(service, (set = new Set()));
    set.add(subscriber);
    // After subscribe() returns: the instances already up, if the cache has the service.
    queueMicrotask(() => this.sync(subscriber, 'all'));
    return {
      close: () => {
        subscriber.closed = true;
        const current = this.byService.get(service);
        current?.delete(subscriber);
        if (current?.size === 0) this.byService.delete(service);
      },
    };
  }

  /** Stops every callback (the client closes). */
  closeAll(): void {
    for (const set of this.byService.values()) for (const subscriber of set) subscriber.closed = true;
    this.byService.clear();
  }

  private changed(service: string, ids: ChangedIds): void {
    for (const subscriber of [...(this.byService.get(service) ?? [])]) this.sync(subscriber, ids);
  }

  private sync(subscriber: Subscriber, ids: ChangedIds): void {
    if (subscriber.closed || !this.cache.has(subscriber.service)) return;
    const current = this.cache.instancesOf(subscriber.service);
    const checked = ids === 'all' ? [...subscriber.known.keys(), ...current.keys()] : ids;
    const transitions = diffAvailable(subscriber.known, current, checked);
    if (isEmpty(transitions)) return;
    applyTransitions(subscriber.known, transitions);
    this.deliver(subscriber, transitions);
  }

  private deliver(subscriber: Subscriber, transitions: Transitions): void {
    const { handlers, service } = subscriber;
    // A throwing callback must not stop the others, nor the stream that feeds them.
    const call = (name: string, fn: () => void) => {
      try {
        fn();
      } catch (error) {
        this.log.error({ service, callback: name, err: error }, 'subscriber callback threw');
      }
    };
    // Ups before downs: a pool that swaps one instance for another is never left empty.
    for (const instance of transitions.up) if (handlers.onUp && !subscriber.closed) call('onUp', () => handlers.onUp!(instance));
    for (const instance of transitions.down) if (handlers.onDown && !subscriber.closed) call('onDown', () => handlers.onDown!(instance));
    if (handlers.onChange && !subscriber.closed) {
      const update = { service, instances: sortedById(subscriber.known.values()), ...transitions };
      call('onChange', () => handlers.onChange!(update));
    }
  }
}
