import { describe, expect, it } from 'vitest';
import type { ResolvedService, ServiceEntry } from '../../../src/xds/catalog.js';
import { WildcardSets, type WildcardSet } from '../../../src/xds/wildcard-set.js';
import { FakeClock } from '../../support/fake-clock.js';

/**
 * A store of services by namespace, read through the catalog's `listed` (each service costs 1
 * unit, and is served); a service keeps its entry until `touch` says its resources changed.
 */
function setUp(services: Record<string, string[]>, unitsPerTurn = 2) {
  const clock = new FakeClock();
  const stored = new Map(Object.entries(services).map(([namespace, names]) => [namespace, new Set(names)]));
  const looked: string[] = [];
  const failures: unknown[] = [];
  const kept = new Map<string, ServiceEntry>();
  const touch = (name: string) => kept.delete(name);
  const catalog = {
    listed(namespace: string, service: string): ResolvedService {
      looked.push(`${namespace}/${service}`);
      const name = `${service}.${namespace}`;
      const isStored = stored.get(namespace)?.has(service) ?? false;
      let entry = kept.get(name) ?? null;
      if (!isStored) entry = null;
      else if (entry === null) kept.set(name, (entry = { name, namespace } as ServiceEntry));
      return { name, entry, stored: isStored, cost: 1 };
    },
    regionsOfBuild: () => () => undefined,
  };
  const views = {
    servicesOf: (namespace: string) => [...(stored.get(namespace) ?? [])].sort(),
    keyOf: (namespace: string, service: string) => `${namespace}/${service.toLowerCase()}`,
  };
  const sets = new WildcardSets({ catalog, views, clock, failed: (error) => failures.push(error) }, { namespaces: Object.keys(services), unitsPerTurn });
  const names = (set: WildcardSet) => set.entries.map((entry) => entry.name);
  return { clock, stored, looked, failures, sets, names, touch };
}

describe('WildcardSets', () => {
  it('answers at once a set that fits one turn, and otherwise after its turns', async () => {
    const small = setUp({ a: ['x'] });
    const got: string[][] = [];
    small.sets.when('ring_hash', (set) => got.push(small.names(set)));
    expect(got).toEqual([['x.a']]);

    const big = setUp({ a: ['x', 'y', 'z'], b: ['w'] }, 2);
    big.sets.when('ring_hash', (set) => got.push(big.names(set)));
    expect(got).toHaveLength(1);
    expect(big.looked).toEqual(['a/x', 'a/y']);
    await big.clock.advance(0);
    expect(got[1]).toEqual(['x.a', 'y.a', 'z.a', 'w.b']);
  });

  it('joins the build under way when nothing changed since it started, and otherwise waits for the next', async () => {
    const { clock, stored, sets, names } = setUp({ a: ['s1', 's2', 's3', 's4'] }, 2);
    const got: [string, string[]][] = [];
    sets.when('ring_hash', (set) => got.push(['first', names(set)]));
    sets.when('ring_hash', (set) => got.push(['joined', names(set)]));
    stored.get('a')!.add('s0');
    sets.changed('a', 's0');
    sets.when('ring_hash', (set) => got.push(['after a change', names(set)]));
    // One push per next build under one key.
    sets.when('ring_hash', (set) => got.push(['push', names(set)]), 'push');
    sets.when('ring_hash', (set) => got.push(['push again', names(set)]), 'push');
    await clock.advance(0);
    expect(got).toEqual([
      ['first', ['s1.a', 's2.a', 's3.a', 's4.a']],
      ['joined', ['s1.a', 's2.a', 's3.a', 's4.a']],
      // A service new since the listing is appended to it.
      ['after a change', ['s1.a', 's2.a', 's3.a', 's4.a', 's0.a']],
      ['push', ['s1.a', 's2.a', 's3.a', 's4.a', 's0.a']],
    ]);
    expect(sets.building('ring_hash')).toBe(false);
  });

  it('builds each policy apart, drops a service the store no longer holds from the listing, and lists the store again after many changes with no build', async () => {
    const { clock, stored, looked, sets, names } = setUp({ a: ['s1', 's2'] }, 10);
    const got: string[][] = [];
    sets.when('ring_hash', (set) => got.push(names(set)));
    sets.when('round_robin', (set) => got.push(names(set)));
    expect(got).toEqual([
      ['s1.a', 's2.a'],
      ['s1.a', 's2.a'],
    ]);
    stored.get('a')!.delete('s1');
    sets.changed('a', 's1');
    sets.when('ring_hash', (set) => got.push(names(set)));
    looked.length = 0;
    sets.when('ring_hash', (set) => got.push(names(set)));
    // The build that found s1 gone had it listed; the next one does not look at it.
    expect(looked).toEqual(['a/s2']);
    for (let i = 0; i < 10_001; i += 1) sets.changed('a', `n${i}`);
    for (let i = 0; i < 3; i += 1) stored.get('a')!.add(`new${i}`);
    sets.when('ring_hash', (set) => got.push(names(set)));
    await clock.advance(0);
    expect(got.at(-1)).toEqual(['new0.a', 'new1.a', 'new2.a', 's2.a']);
  });

  it('answers every waiter when one throws, and none after close', async () => {
    const { clock, failures, sets } = setUp({ a: ['s1', 's2', 's3'] }, 1);
    const answered: string[] = [];
    sets.when('ring_hash', () => {
      throw new Error('a stream failed');
    });
    sets.when('ring_hash', () => answered.push('second'));
    await clock.advance(0);
    expect(answered).toEqual(['second']);
    expect(failures).toEqual([new Error('a stream failed')]);
    sets.when('ring_hash', () => answered.push('after close'));
    sets.close();
    await clock.advance(0);
    expect(answered).toEqual(['second']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('keeps what changed from one set to the next, and answers what changed since an older set', () => {
    const { stored, sets, touch } = setUp({ a: ['s1', 's2', 's3'] }, 100);
    const generations: number[] = [];
    const build = () => sets.when('ring_hash', (set) => generations.push(set.generation));
    build();
    expect(sets.changedSince('ring_hash', 0, 1)).toBeNull();
    touch('s2.a');
    sets.changed('a', 's2');
    build();
    stored.get('a')!.delete('s3');
    sets.changed('a', 's3');
    build();
    expect(generations).toEqual([1, 2, 3]);
    expect(sets.changedSince('ring_hash', 1, 2)).toEqual(new Set(['s2.a']));
    expect(sets.changedSince('ring_hash', 2, 3)).toEqual(new Set(['s3.a']));
    expect(sets.changedSince('ring_hash', 1, 3)).toEqual(new Set(['s2.a', 's3.a']));
    expect(sets.changedSince('ring_hash', 3, 3)).toEqual(new Set());
    // Older than the sets kept: unknown (the stream compares the whole set).
    for (let i = 0; i < 64; i += 1) build();
    expect(generations.at(-1)).toBe(67);
    expect(sets.changedSince('ring_hash', 2, 67)).toBeNull();
    expect(sets.changedSince('ring_hash', 3, 67)).toEqual(new Set());
  });

  it('counts as changed a service another policy\'s build found gone (its own walk no longer lists it)', () => {
    const { stored, sets, names } = setUp({ a: ['s1', 's2'] }, 100);
    const got: string[][] = [];
    sets.when('ring_hash', (set) => got.push(names(set)));
    sets.when('round_robin', (set) => got.push(names(set)));
    stored.get('a')!.delete('s1');
    sets.changed('a', 's1');
    sets.when('ring_hash', (set) => got.push(names(set)));
    sets.when('round_robin', (set) => got.push(names(set)));
    expect(got.slice(2)).toEqual([['s2.a'], ['s2.a']]);
    expect(sets.changedSince('ring_hash', 1, 2)).toEqual(new Set(['s1.a']));
    expect(sets.changedSince('round_robin', 1, 2)).toEqual(new Set(['s1.a']));
  });

  it('answers the waiters of a set one a turn (each may write a whole set)', async () => {
    const { clock, sets } = setUp({ a: ['s1', 's2', 's3'] }, 1);
    let turn = 0;
    const schedule = clock.setTimeout.bind(clock);
    clock.setTimeout = (fn, delayMs) =>
      schedule(() => {
        turn += 1;
        fn();
      }, delayMs);
    const answeredIn: number[] = [];
    for (let i = 0; i < 3; i += 1) sets.when('ring_hash', () => answeredIn.push(turn));
    await clock.advance(0);
    expect(answeredIn).toHaveLength(3);
    expect(answeredIn[1]).toBe(answeredIn[0]! + 1);
    expect(answeredIn[2]).toBe(answeredIn[1]! + 1);
  });
});
