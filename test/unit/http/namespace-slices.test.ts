import { describe, expect, it } from 'vitest';
import { KeptBuilds, type SlicedBuild } from '../../../src/http/namespace-slices.js';

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
