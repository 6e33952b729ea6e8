import { describe, expect, it } from 'vitest';
import type { GrpcConnection, GrpcSubscription } from '../../../src/nacos/grpc/handlers.js';
import { SubscriptionIndex } from '../../../src/nacos/grpc/subscription-index.js';

const connection = (id: string): GrpcConnection => ({ id, address: '127.0.0.1', instances: new Map(), subscriptions: new Map() });
const subscription = (service: string, clusters = ''): GrpcSubscription => ({
  key: `default\n${service}\nDEFAULT_GROUP\n${clusters}`,
  namespace: 'default',
  service,
  group: 'DEFAULT_GROUP',
  clusters,
  serviceKey: `default/${service}`,
});

/** The ids of the connections subscribed to each variant of a service. */
function subscribers(index: SubscriptionIndex<GrpcConnection>, serviceKey: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [key, variant] of index.of(serviceKey) ?? []) out[key.split('\n').at(-1) || '(all)'] = [...variant.connections].map((c) => c.id);
  return out;
}

describe('Nacos gRPC subscription index', () => {
  it('finds the subscribers of a service by variant, each connection once however often it subscribes', () => {
    const index = new SubscriptionIndex<GrpcConnection>();
    const [a, b] = [connection('a'), connection('b')];
    index.add(a, subscription('web'));
    index.add(a, subscription('web'));
    index.add(b, subscription('web'));
    index.add(b, subscription('web', 'zone-a'));
    index.add(b, subscription('api'));
    expect(subscribers(index, 'default/web')).toEqual({ '(all)': ['a', 'b'], 'zone-a': ['b'] });
    expect(subscribers(index, 'default/api')).toEqual({ '(all)': ['b'] });
    expect(index.has('default/other')).toBe(false);
    expect(index.size).toBe(4);
    expect([...b.subscriptions.keys()]).toHaveLength(3);
  });

  it('unsubscribes one variant, and drops a service with no subscriber left', () => {
    const index = new SubscriptionIndex<GrpcConnection>();
    const [a, b] = [connection('a'), connection('b')];
    index.add(a, subscription('web'));
    index.add(b, subscription('web'));
    index.remove(a, subscription('web').key);
    expect(subscribers(index, 'default/web')).toEqual({ '(all)': ['b'] });
    expect(a.subscriptions.size).toBe(0);
    // Removing what is not held changes nothing.
    index.remove(a, subscription('web').key);
    index.remove(b, subscription('web', 'zone-a').key);
    expect(index.size).toBe(1);
    index.remove(b, subscription('web').key);
    expect(index.has('default/web')).toBe(false);
    expect(index.size).toBe(0);
  });

  it('drops every subscription of a connection that is gone (its stream ended or it expired)', () => {
    const index = new SubscriptionIndex<GrpcConnection>();
    const [a, b] = [connection('a'), connection('b')];
    for (const service of ['web', 'api']) {
      index.add(a, subscription(service));
      index.add(b, subscription(service));
    }
    index.removeAll(a);
    expect(subscribers(index, 'default/web')).toEqual({ '(all)': ['b'] });
    expect(subscribers(index, 'default/api')).toEqual({ '(all)': ['b'] });
    expect(a.subscriptions.size).toBe(0);
    index.removeAll(b);
    expect(index.size).toBe(0);
    expect(index.has('default/web')).toBe(false);
  });
});
