import { describe, expect, it } from 'vitest';
import { decideMerge, isTombstoneExpired } from '../../../src/registry/merge.js';
import { record, stored } from '../../support/records.js';

const ctx = { nowMs: 100_000, tombstoneTtlMs: 60_000 };

describe('decideMerge', () => {
  it.each([
    ['a record for an unknown key', undefined, record({ wallMs: 2_000 }), 'apply'],
    ['a newer write', stored(record({ wallMs: 1_000 })), record({ wallMs: 2_000 }), 'apply'],
    ['the same write again', stored(record({ wallMs: 2_000 })), record({ wallMs: 2_000 }), 'ignore'],
    ['an older write', stored(record({ wallMs: 3_000 })), record({ wallMs: 2_000 }), 'ignore'],
    ['same time, higher counter', stored(record({ wallMs: 2_000 })), record({ wallMs: 2_000, counter: 1 }), 'apply'],
    ['same time and counter, higher peer id', stored(record({ wallMs: 2_000, peerId: 'a' })), record({ wallMs: 2_000, peerId: 'b' }), 'apply'],
    ['same time and counter, lower peer id', stored(record({ wallMs: 2_000, peerId: 'b' })), record({ wallMs: 2_000, peerId: 'a' }), 'ignore'],
    ['a newer cancel', stored(record({ wallMs: 1_000 }), { heardUntilMs: 200_000 }), record({ wallMs: 90_000, deleted: 'cancel' }), 'apply'],
    ['a newer eviction while heard here', stored(record({ wallMs: 1_000 }), { heardUntilMs: 100_001 }), record({ wallMs: 90_000, deleted: 'evict' }), 'reassert'],
    ['a newer eviction after the local lease ended', stored(record({ wallMs: 1_000 }), { heardUntilMs: 100_000 }), record({ wallMs: 90_000, deleted: 'evict' }), 'apply'],
    ['an eviction for an unknown key', undefined, record({ wallMs: 90_000, deleted: 'evict' }), 'apply'],
    ['an expired tombstone for an unknown key', undefined, record({ wallMs: 40_000, deleted: 'cancel' }), 'ignore'],
    ['an expired tombstone over an older tombstone', stored(record({ wallMs: 1_000, deleted: 'cancel' })), record({ wallMs: 40_000, deleted: 'evict' }), 'ignore'],
    ['an expired tombstone over an older live record', stored(record({ wallMs: 1_000 })), record({ wallMs: 40_000, deleted: 'cancel' }), 'apply'],
    ['a register over a tombstone', stored(record({ wallMs: 1_000, deleted: 'cancel' })), record({ wallMs: 2_000 }), 'apply'],
  ] as const)('%s: %s', (_name, current, incoming, expected) => {
    expect(decideMerge(current, incoming, ctx)).toBe(expected);
  });
});

describe('isTombstoneExpired', () => {
  it.each([
    [record({ wallMs: 40_000, deleted: 'cancel' }), true],
    [record({ wallMs: 40_001, deleted: 'cancel' }), false],
    [record({ wallMs: 1, deleted: null }), false],
  ])('%#', (rec, expected) => {
    expect(isTombstoneExpired(rec, ctx.nowMs, ctx.tombstoneTtlMs)).toBe(expected);
  });
});
