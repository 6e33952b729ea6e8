import { describe, expect, it } from 'vitest';
import { RegistryClientError } from '../../../src/client/errors.js';
import { nearest, parseStrategy, pickInstance, strategyKey } from '../../../src/client/pick.js';
import type { PickStrategy } from '../../../src/client/types.js';

const inst = (id: string, zone = '', weight = 1) => ({ id, zone, weight });
const abc = [inst('a', 'z1'), inst('b', 'z1'), inst('c', 'z2')];

describe('pickInstance', () => {
  const cases: { name: string; candidates: ReturnType<typeof inst>[]; strategy: PickStrategy; counter?: number; random?: number; expected: string | undefined }[] = [
    { name: 'nothing to choose', candidates: [], strategy: 'round-robin', expected: undefined },
    { name: 'round-robin, first pick', candidates: abc, strategy: 'round-robin', counter: 0, expected: 'a' },
    { name: 'round-robin, second pick', candidates: abc, strategy: 'round-robin', counter: 1, expected: 'b' },
    { name: 'round-robin wraps', candidates: abc, strategy: 'round-robin', counter: 3, expected: 'a' },
    { name: 'round-robin, huge counter', candidates: abc, strategy: 'round-robin', counter: 2 ** 40 + 1, expected: 'c' },
    { name: 'random, low end', candidates: abc, strategy: 'random', random: 0, expected: 'a' },
    { name: 'random, middle', candidates: abc, strategy: 'random', random: 0.5, expected: 'b' },
    { name: 'random, top end', candidates: abc, strategy: 'random', random: 0.999999, expected: 'c' },
    { name: 'weighted, inside the first share', candidates: [inst('a', '', 1), inst('b', '', 3)], strategy: 'weighted', random: 0.24, expected: 'a' },
    { name: 'weighted, inside the second share', candidates: [inst('a', '', 1), inst('b', '', 3)], strategy: 'weighted', random: 0.25, expected: 'b' },
    { name: 'weighted skips weight 0', candidates: [inst('a', '', 0), inst('b', '', 2), inst('c', '', 0)], strategy: 'weighted', random: 0, expected: 'b' },
    { name: 'weighted, top end with a trailing weight 0', candidates: [inst('a', '', 1), inst('b', '', 0)], strategy: 'weighted', random: 0.999999, expected: 'a' },
    { name: 'weighted, every weight 0', candidates: [inst('a', '', 0), inst('b', '', 0)], strategy: 'weighted', random: 0.5, expected: undefined },
    { name: 'weighted ignores negative and NaN weights', candidates: [inst('a', '', -5), inst('b', '', Number.NaN), inst('c', '', 1)], strategy: 'weighted', random: 0.1, expected: 'c' },
    { name: 'zone: only the zone, round-robin by default', candidates: abc, strategy: { zone: 'z2' }, counter: 0, expected: 'c' },
    { name: 'zone: round-robin within the zone', candidates: abc, strategy: { zone: 'z1' }, counter: 1, expected: 'b' },
    { name: 'zone: round-robin within the zone wraps there', candidates: abc, strategy: { zone: 'z1' }, counter: 2, expected: 'a' },
    { name: 'zone with none: falls back to the other zones', candidates: abc, strategy: { zone: 'z9' }, counter: 2, expected: 'c' },
    { name: 'zone with a random fallback', candidates: abc, strategy: { zone: 'z1', fallback: 'random' }, random: 0.9, expected: 'b' },
    {
      name: 'zone with a weighted fallback',
      candidates: [inst('a', 'z1', 1), inst('b', 'z1', 9), inst('c', 'z2', 100)],
      strategy: { zone: 'z1', fallback: 'weighted' },
      random: 0.5,
      expected: 'b',
    },
    {
      name: 'second-choice zone when the first has none',
      candidates: abc,
      strategy: { zone: 'z9', fallback: { zone: 'z2' } },
      counter: 0,
      expected: 'c',
    },
    {
      name: 'any zone when neither choice has one',
      candidates: abc,
      strategy: { zone: 'z8', fallback: { zone: 'z9' } },
      counter: 1,
      expected: 'b',
    },
    { name: 'the empty zone is a zone like any other', candidates: [inst('a', 'z1'), inst('b', '')], strategy: { zone: '' }, counter: 0, expected: 'b' },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const chosen = pickInstance(c.candidates, c.strategy, { counter: c.counter ?? 0, random: c.random ?? 0 });
      expect(chosen?.id).toBe(c.expected);
    });
  }

  it('round-robin visits every candidate once per round', () => {
    const seen = Array.from({ length: 6 }, (_, counter) => pickInstance(abc, 'round-robin', { counter, random: 0 })?.id);
    expect(seen).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });

  it('weighted picks in proportion to weight over evenly spread random numbers', () => {
    const candidates = [inst('a', '', 1), inst('b', '', 2), inst('c', '', 7)];
    const counts = new Map<string, number>();
    for (let i = 0; i < 1_000; i++) {
      const id = pickInstance(candidates, 'weighted', { counter: i, random: (i + 0.5) / 1_000 })!.id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({ a: 100, b: 200, c: 700 });
  });
});

describe('parseStrategy', () => {
  it('accepts every documented form', () => {
    for (const strategy of ['round-robin', 'random', 'weighted', { zone: 'a' }, { zone: 'a', fallback: 'weighted' }, { zone: 'a', fallback: { zone: 'b', fallback: 'random' } }] as PickStrategy[]) {
      expect(parseStrategy(strategy)).toEqual(strategy);
    }
  });

  it('refuses anything else with REG_CLIENT_ERR_INVALID_ARGUMENT naming the field', () => {
    const bad: [unknown, string][] = [
      ['fastest', 'strategy'],
      [undefined, 'strategy'],
      [null, 'strategy'],
      [['random'], 'strategy'],
      [{}, 'strategy.zone'],
      [{ zone: 3 }, 'strategy.zone'],
      [{ zone: 'a', fallback: 'nope' }, 'strategy.fallback'],
      [{ zone: 'a', prefer: 'b' }, 'strategy'],
    ];
    for (const [value, field] of bad) {
      let caught: unknown;
      try {
        parseStrategy(value);
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(value)).toBeInstanceOf(RegistryClientError);
      expect((caught as RegistryClientError).code).toBe('REG_CLIENT_ERR_INVALID_ARGUMENT');
      expect((caught as RegistryClientError).message.startsWith(`${field}:`), (caught as Error).message).toBe(true);
    }
  });

  it('names strategies apart, so each keeps its own round-robin counter', () => {
    const keys = ['round-robin', 'random', 'weighted', { zone: 'a' }, { zone: 'b' }, { zone: 'a', fallback: 'random' }].map((s) => strategyKey(s as PickStrategy));
    expect(new Set(keys).size).toBe(keys.length);
    expect(strategyKey({ zone: 'a' })).toBe(strategyKey({ zone: 'a', fallback: 'round-robin' }));
  });
});

describe('zone preference with a region', () => {
  const instances = [
    { id: 'eu-a-1', zone: 'eu-1a', region: 'eu', weight: 1 },
    { id: 'eu-b-1', zone: 'eu-1b', region: 'eu', weight: 1 },
    { id: 'us-a-1', zone: 'us-1a', region: 'us', weight: 1 },
  ];
  const ids = (list: readonly { id: string }[]) => list.map((item) => item.id);

  it.each([
    ['eu-1a', 'eu', ['eu-a-1']],
    ['eu-1c', 'eu', ['eu-a-1', 'eu-b-1']],
    ['eu-1c', undefined, ['eu-a-1', 'eu-b-1', 'us-a-1']],
    ['ap-1a', 'ap', ['eu-a-1', 'eu-b-1', 'us-a-1']],
    ['us-1b', 'us', ['us-a-1']],
  ])('a client in %s (%s) gets the nearest: %j', (zone, region, expected) => {
    expect(ids(nearest(instances, zone, region))).toEqual(expected);
    const picked = pickInstance(instances, region === undefined ? { zone } : { zone, region }, { counter: 0, random: 0 });
    expect(expected).toContain(picked!.id);
  });

  it('parses a region and keeps a counter apart for it', () => {
    expect(parseStrategy({ zone: 'eu-1a', region: 'eu' })).toEqual({ zone: 'eu-1a', region: 'eu' });
    expect(() => parseStrategy({ zone: 'eu-1a', region: 5 })).toThrow(/strategy.region/);
    expect(strategyKey({ zone: 'a', region: 'r' })).not.toBe(strategyKey({ zone: 'a' }));
  });
});
