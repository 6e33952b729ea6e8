import { describe, expect, it } from 'vitest';
import type { ResolvedService, ServiceEntry } from '../../../src/xds/catalog.js';
import { WildcardSets, type WildcardSet } from '../../../src/xds/wildcard-set.js';
import { FakeClock } from '../../support/fake-clock.js';

/**
 * A store of services by namespace, read through the catalog's `listed` (each service costs 1
 * unit, and is served; its name matched in any case, as the store does, and answered as stored);
 * a service keeps its entry until `touch` says its resources changed; looking at one named in
 * `throwing` (`namespace/service`) throws, once.
 */
function setUp(services: Record<string, string[]>, unitsPerTurn = 2) {
  const clock = new FakeClock();
  const stored = new Map(Object.entries(services).map(([namespace, names]) => [namespace, new Set(names)]));
  const looked: string[] = [];
  const failures: unknown[] = [];
  const forgotten: string[] = [];
  const kept = new Map<string, ServiceEntry>();
  const throwing = new Set<string>();
  const touch = (name: string) => kept.delete(name);
  const catalog = {
    listed(namespace: string, service: string): ResolvedService {
      looked.push(`${namespace}/${service}`);
      if (throwing.delete(`${namespace}/${service}`)) throw new Error(`cannot encode ${service}`);
      const spelled = [...(stored.get(namespace) ?? [])].find((name) => name.toLowerCase() === service.toLowerCase());
      if (spelled === undefined) return { name: null, entry: null, stored: false, cost: 1 };
      const name = `${spelled}.${namespace}`;
      let entry = kept.get(name) ?? null;
      if (entry === null) kept.set(name, (entry = { name, namespace } as ServiceEntry));
      return { name, entry, stored: true, service: spelled, cost: 1 };
    },
    regionsOfBuild: () => () => undefined,
    forgetService: (namespace: string, service: string) => forgotten.push(`${namespace}/${service}`),
  };
  const views = {
    servicesOf: (namespace: string) => [...(stored.get(namespace) ?? [])].sort(),
    keyOf: (namespace: string, service: string) => `${namespace}/${service.toLowerCase()}`,
  };
  const failedIn: string[] = [];
  const failed = (error: unknown, what: string) => {
    failures.push(error);
    failedIn.push(what);
  };
  const sets = new WildcardSets({ catalog, views, clock, failed }, { namespaces: Object.keys(services), unitsPerTurn });
  const names = (set: WildcardSet) => set.entries.map((entry) => entry.name);
  return { clock, stored, looked, failures, failedIn, forgotten, throwing, sets, names, touch };
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
    for (let i = 0; i < 64; i += 1) {
      touch('s1.a');
      sets.changed('a', 's1');
      build();
    }
    expect(generations.at(-1)).toBe(67);
    expect(sets.changedSince('ring_hash', 2, 67)).toBeNull();
    expect(sets.changedSince('ring_hash', 3, 67)).toEqual(new Set(['s1.a']));
  });

  it('answers a build that found nothing changed with the last set itself (streams hold the set they were sent)', () => {
    const { sets, touch } = setUp({ a: ['s1', 's2'] }, 100);
    const got: WildcardSet[] = [];
    const build = () => sets.when('ring_hash', (set) => got.push(set));
    build();
    build();
    build();
    expect(got[1]).toBe(got[0]);
    expect(got[2]).toBe(got[0]);
    expect(got[0]!.generation).toBe(1);
    // A change makes a new set, which later builds with nothing changed answer in turn.
    touch('s2.a');
    sets.changed('a', 's2');
    build();
    expect(got[3]).not.toBe(got[0]);
    expect(got[3]!.generation).toBe(2);
    expect(sets.changedSince('ring_hash', 1, 2)).toEqual(new Set(['s2.a']));
    build();
    expect(got[4]).toBe(got[3]);
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

  it('ends a build that throws, in its first turn or a later one: its waiters are told, nothing escapes, and the next build answers', async () => {
    const { clock, failures, failedIn, throwing, sets, names } = setUp({ a: ['s1', 's2', 's3'] }, 1);
    const got: string[][] = [];
    const told: string[] = [];
    const tell = (who: string) => (error: unknown) => told.push(`${who}: ${(error as Error).message}`);
    // In its first turn: the caller's.
    throwing.add('a/s1');
    sets.when('ring_hash', (set) => got.push(names(set)), undefined, tell('first'));
    expect(told).toEqual(['first: cannot encode s1']);
    expect(sets.building('ring_hash')).toBe(false);
    // In a later turn (a timer's): a waiter queued after a change meanwhile gets the next build.
    throwing.add('a/s2');
    sets.when('ring_hash', (set) => got.push(names(set)), undefined, tell('second'));
    sets.changed('a', 's3');
    sets.when('ring_hash', (set) => got.push(names(set)), 'push', tell('push'));
    await clock.advance(0);
    expect(told).toEqual(['first: cannot encode s1', 'second: cannot encode s2']);
    expect(got).toEqual([['s1.a', 's2.a', 's3.a']]);
    expect(failures).toEqual([new Error('cannot encode s1'), new Error('cannot encode s2')]);
    expect(failedIn).toEqual(['build', 'build']);
    expect(sets.building('ring_hash')).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });

  it('lists a service as the store spells it now (purged, no change announced, and made again in another case)', () => {
    const { stored, looked, sets, names } = setUp({ a: ['greeter', 'other'] }, 100);
    const got: string[][] = [];
    sets.when('ring_hash', (set) => got.push(names(set)));
    stored.get('a')!.delete('greeter');
    stored.get('a')!.add('Greeter');
    sets.changed('a', 'Greeter');
    sets.when('ring_hash', (set) => got.push(names(set)));
    looked.length = 0;
    sets.when('ring_hash', (set) => got.push(names(set)));
    expect(got).toEqual([
      ['greeter.a', 'other.a'],
      ['Greeter.a', 'other.a'],
      ['Greeter.a', 'other.a'],
    ]);
    expect(sets.changedSince('ring_hash', 1, 2)).toEqual(new Set(['Greeter.a', 'greeter.a']));
    expect(looked).toEqual(['a/Greeter', 'a/other']);
  });

  it('has the catalog forget the services purged while the listing was dropped (no build looks at them again)', () => {
    const { stored, forgotten, sets } = setUp({ a: ['s1', 's2'] }, 100);
    sets.when('ring_hash', () => {});
    // Purged: no change says so.
    stored.get('a')!.delete('s1');
    for (let i = 0; i < 10_001; i += 1) sets.changed('a', `n${i}`);
    expect(forgotten).toEqual([]);
    sets.when('ring_hash', () => {});
    expect(forgotten).toEqual(['a/s1']);
  });
});
