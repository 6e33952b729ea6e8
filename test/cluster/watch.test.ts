import { describe, expect, it } from 'vitest';
import type { WatchEvent } from '../../src/watch/hub.js';
import { instance } from '../support/cluster.js';
import { startCluster, useClusterCleanup, visibleIds } from './helpers.js';

useClusterCleanup();

/** Rebuilds a service's instance set from a subscriber's events, checking their order. */
function replay(events: WatchEvent[]) {
  const state = new Map<string, Map<string, string>>();
  const lastRevision = new Map<string, number>();
  const seen = new Set<string>();
  let duplicates = 0;
  for (const event of events) {
    if (event.type === 'dropped') throw new Error('dropped');
    const key = `${event.namespace}/${event.service}`;
    expect(event.revision, `revisions grow for ${key}`).toBeGreaterThan(lastRevision.get(key) ?? -1);
    lastRevision.set(key, event.revision);
    const instances = state.get(key) ?? new Map<string, string>();
    if (event.type === 'snapshot') {
      instances.clear();
      for (const view of event.instances) instances.set(view.instanceId, view.version);
    } else {
      for (const view of [...event.added, ...event.changed]) {
        if (seen.has(`${view.instanceId}@${view.version}`)) duplicates += 1;
        seen.add(`${view.instanceId}@${view.version}`);
        instances.set(view.instanceId, view.version);
      }
      for (const { instanceId } of event.removed) instances.delete(instanceId);
    }
    state.set(key, instances);
  }
  return { state, duplicates };
}

describe('watches across the cluster', () => {
  it('delivers every change, made on any peer, to subscribers on every peer once, in order, coalesced', async () => {
    const c = await startCluster({ size: 3, seed: 51 });
    const streams = new Map<string, WatchEvent[]>();
    for (const id of c.ids) {
      const events: WatchEvent[] = [];
      streams.set(id, events);
      c.node(id).watch.subscribe({ namespace: 'default', services: ['orders'] }, (event) => (events.push(event), true));
    }
    for (let round = 0; round < 10; round++) {
      // A burst: ten writes spread over the peers within a few ms.
      for (let i = 0; i < 10; i++) {
        const peer = c.ids[(round + i) % 3]!;
        const id = `i-${(round * 3 + i) % 12}`;
        if (i % 4 === 3 && c.node(peer).registry.find(instance(id))) c.node(peer).registry.cancel(instance(id));
        else c.node(peer).registry.register(instance(id, { data: { ...instance('x').data, port: 1000 + round * 10 + i } }));
      }
      await c.advance(200);
    }
    await c.advance(5_000);
    expect(c.converged()).toBe(true);
    for (const [peer, events] of streams) {
      const { state, duplicates } = replay(events);
      expect(duplicates).toBe(0);
      expect([...(state.get('default/orders')?.keys() ?? [])].sort()).toEqual(visibleIds(c, peer));
      // Coalescing: far fewer events than the 100 writes.
      expect(events.length).toBeLessThan(40);
    }
  });
});
