import type { GrpcConnection, GrpcSubscription } from './handlers.js';

/** The connections subscribed to one variant of a service (one namespace, service, group and clusters). */
export interface SubscribedVariant<C extends GrpcConnection> {
  subscription: GrpcSubscription;
  connections: Set<C>;
}

/**
 * The v2 subscriptions of a peer by service (the read layer's `views.keyOf`), then by variant
 * (`GrpcSubscription.key`: namespace, service, group and clusters): a change of a service
 * finds its subscribers in one lookup, not in a scan of every connection, and each variant is
 * encoded once for all the connections that asked it. Each connection keeps its own
 * subscriptions too (`connection.subscriptions`: its count is bounded per connection), and
 * the two tables change only here, together.
 */
export class SubscriptionIndex<C extends GrpcConnection> {
  private readonly byService = new Map<string, Map<string, SubscribedVariant<C>>>();

  /** Subscribes `connection` to `subscription`'s variant (again: nothing changes). */
  add(connection: C, subscription: GrpcSubscription): void {
    connection.subscriptions.set(subscription.key, subscription);
    let variants = this.byService.get(subscription.serviceKey);
    if (!variants) this.byService.set(subscription.serviceKey, (variants = new Map()));
    let variant = variants.get(subscription.key);
    if (!variant) variants.set(subscription.key, (variant = { subscription, connections: new Set() }));
    variant.connections.add(connection);
  }

  /** Ends one subscription of `connection` (SubscribeServiceRequest with `subscribe: false`). */
  remove(connection: C, key: string): void {
    const subscription = connection.subscriptions.get(key);
    if (!subscription) return;
    connection.subscriptions.delete(key);
    const variants = this.byService.get(subscription.serviceKey);
    const variant = variants?.get(key);
    if (!variants || !variant) return;
    variant.connections.delete(connection);
    if (variant.connections.size === 0) variants.delete(key);
    if (variants.size === 0) this.byService.delete(subscription.serviceKey);
  }

  /** Ends every subscription of a connection that is gone (its stream ended, or it was forgotten). */
  removeAll(connection: C): void {
    for (const key of [...connection.subscriptions.keys()]) this.remove(connection, key);
  }

  /** The variants of a service that have subscribers, or undefined. */
  of(serviceKey: string): ReadonlyMap<string, SubscribedVariant<C>> | undefined {
    return this.byService.get(serviceKey);
  }

  /** Whether any connection is subscribed to the service. */
  has(serviceKey: string): boolean {
    return this.byService.has(serviceKey);
  }

  /** Subscriptions held in all (a connection's subscription to a variant counts once). */
  get size(): number {
    let size = 0;
    for (const variants of this.byService.values()) for (const variant of variants.values()) size += variant.connections.size;
    return size;
  }

  clear(): void {
    this.byService.clear();
  }
}
