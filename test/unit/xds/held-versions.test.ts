import { describe, expect, it } from 'vitest';
import type { ServiceEntry } from '../../../src/xds/catalog.js';
import { HeldVersions } from '../../../src/xds/held-versions.js';
import type { WildcardSet } from '../../../src/xds/wildcard-set.js';

/** A set of entries `[name, namespace, endpoints version]` (the rest of an entry is not read). */
function setOf(generation: number, entries: [string, string, number][]): WildcardSet {
  const list = entries.map(([name, namespace, version]) => ({ name, namespace, versions: { listener: 1, cluster: 1, endpoints: version } }) as unknown as ServiceEntry);
  return { generation, entries: list, byName: new Map(list.map((entry) => [entry.name, entry])), shared: new Map() };
}
const seesDefault = (namespace: string) => namespace === 'default';

describe('HeldVersions', () => {
  it('holds a whole set as the set: the versions of what the stream sees, nothing else', () => {
    const held = new HeldVersions();
    expect(held.empty).toBe(true);
    held.set('stray', 9);
    held.holdWhole(setOf(1, [['a', 'default', 3], ['b', 'default', 4], ['secret', 'team-b', 5]]), 'endpoints', seesDefault);
    expect(held.empty).toBe(false);
    expect(held.get('a')).toBe(3);
    expect(held.get('b')).toBe(4);
    expect(held.get('secret')).toBeUndefined();
    expect(held.get('stray')).toBeUndefined();
    expect([...held.keys()]).toEqual(['a', 'b']);
  });

  it('keeps names set and deleted since over the set, and walks them with it', () => {
    const held = new HeldVersions();
    held.holdWhole(setOf(1, [['a', 'default', 3], ['b', 'default', 4], ['c', 'default', 5]]), 'endpoints', seesDefault);
    held.set('a', 7).set('d', 1);
    expect(held.delete('b')).toBe(true);
    expect(held.delete('b')).toBe(false);
    expect(held.delete('nothing')).toBe(false);
    expect(held.get('a')).toBe(7);
    expect(held.get('b')).toBeUndefined();
    expect(held.get('d')).toBe(1);
    expect([...held.keys()].sort()).toEqual(['a', 'c', 'd']);
    // Deleting while walking, as a wildcard stream forgets what no longer exists.
    for (const name of held.keys()) if (name !== 'c') held.delete(name);
    expect([...held.keys()]).toEqual(['c']);
    expect(held.delete('d')).toBe(false);
    // A name of the set held again after it was deleted.
    held.set('b', 4);
    expect(held.get('b')).toBe(4);
    // A new whole set replaces everything.
    held.holdWhole(setOf(2, [['z', 'default', 1]]), 'endpoints', seesDefault);
    expect([...held.keys()]).toEqual(['z']);
    expect(held.get('c')).toBeUndefined();
  });

  it('answers as a Map would through any sequence of operations', () => {
    const set = setOf(1, Array.from({ length: 20 }, (_, i): [string, string, number] => [`s${i}`, i % 5 === 0 ? 'team-b' : 'default', i + 1]));
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    for (let run = 0; run < 20; run += 1) {
      const held = new HeldVersions();
      const model = new Map<string, number>();
      for (let step = 0; step < 200; step += 1) {
        const name = `s${Math.floor(random() * 24)}`;
        const pick = random();
        if (pick < 0.05) {
          held.holdWhole(set, 'endpoints', seesDefault);
          model.clear();
          for (const entry of set.entries) if (seesDefault(entry.namespace)) model.set(entry.name, entry.versions.endpoints);
        } else if (pick < 0.5) {
          const version = Math.floor(random() * 30);
          held.set(name, version);
          model.set(name, version);
        } else {
          expect(held.delete(name)).toBe(model.delete(name));
        }
        expect(held.get(name)).toBe(model.get(name));
        // `empty` may say no for a set whose every name was deleted since; never yes while something is held.
        if (model.size > 0) expect(held.empty).toBe(false);
      }
      expect([...held.keys()].sort()).toEqual([...model.keys()].sort());
    }
  });
});
