import { describe, expect, it } from 'vitest';
import { applicationOf } from '../../../src/app/application.js';
import { KeptBuilds, serviceSummaries, type SlicedBuild } from '../../../src/http/namespace-slices.js';
import { listServices } from '../../../src/registry/queries.js';
import { instance } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';

/** Reads whose revision never moves: a kept document's holds depend on nothing here. */
const reads = { views: { revision: 1 }, leaseView: () => ({ nowMs: 0 }) } as unknown as ConstructorParameters<typeof KeptBuilds>[0];
const built = async (): Promise<SlicedBuild> => ({ revision: 1, stamp: undefined });

describe('KeptBuilds', () => {
  it('comes back to its bound once the builds that held it past it are done', async () => {
    const kept = new KeptBuilds<SlicedBuild>(reads, 2);
    const gates: (() => void)[] = [];
    // Three keys built at once: none is idle, so none is forgotten and three are held.
    const waiting = ['a', 'b', 'c'].map((key) =>
      kept.get(key, async () => {
        await new Promise<void>((open) => gates.push(open));
        return built();
      }),
    );
    expect(kept.keptCount).toBe(3);
    for (const open of gates) open();
    await Promise.all(waiting);
    // Before the fix the next key forgot one and took its place: three for good.
    await kept.get('d', built);
    expect(kept.keptCount).toBe(2);
  });
});

describe('serviceSummaries', () => {
  it('counts every service of a namespace that serves an instance, of a group when given, as the store does', async () => {
    const { node } = await createTestNode();
    try {
      for (let i = 0; i < 300; i++) {
        const service = `svc-${i % 60}`;
        const status = i % 7 === 0 ? 'DOWN' : 'UP';
        const metadata: Record<string, string> = i % 3 === 0 ? { group: 'canary' } : {};
        node.registry.register(instance(`i-${i}`, { service, namespace: i % 5 === 0 ? 'team-a' : 'default', data: { ...instance('x').data, status, metadata } }));
      }
      node.registry.cancel({ namespace: 'default', service: 'svc-1', instanceId: 'i-1' });
      const reads = applicationOf(node).reads;
      for (const namespace of ['default', 'team-a', 'none']) {
        for (const group of [null, 'canary', 'DEFAULT_GROUP']) {
          expect(await serviceSummaries(reads, namespace, group)).toEqual(listServices(node.store, namespace, node.registry.leaseView(), group));
        }
      }
      // svc-0, svc-5, ... (every fifth) are team-a's only.
      expect(await serviceSummaries(reads, 'default', null)).toHaveLength(48);
    } finally {
      await node.stop();
    }
  });
});
