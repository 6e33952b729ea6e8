import { describe, expect, it } from 'vitest';
import { classifyChange } from '../../../src/metrics/write-counts.js';
import type { StoreChange } from '../../../src/registry/store.js';
import { record, stored } from '../../support/records.js';

const live = record({ owner: 'a', peerId: 'a' });
const liveElsewhere = record({ owner: 'b', peerId: 'b' });
const cancelled = record({ owner: 'a', peerId: 'a', deleted: 'cancel', wallMs: 2_000 });
const evicted = record({ owner: 'a', peerId: 'a', deleted: 'evict', wallMs: 2_000 });

const change = (over: Partial<StoreChange> & { entry?: StoreChange['entry'] }): StoreChange => ({
  kind: 'write',
  origin: 'local',
  before: null,
  entry: stored(live),
  ...over,
});

describe('classifyChange', () => {
  it.each([
    ['a new instance is a registration', change({}), 'registration'],
    ['an instance back after a tombstone is a registration', change({ before: cancelled }), 'registration'],
    ['a write over a live record (update, re-register, takeover) is nothing', change({ before: live }), null],
    ['a cancel', change({ before: live, entry: stored(cancelled) }), 'cancel'],
    ['an eviction of an owned instance', change({ before: live, entry: stored(evicted) }), 'expired'],
    ['an eviction of an instance owned elsewhere is an orphan sweep', change({ before: liveElsewhere, entry: stored(evicted) }), 'orphan'],
    ['a second delete over a tombstone is nothing', change({ before: cancelled, entry: stored(evicted) }), null],
    ['a hide is a local eviction', change({ kind: 'local', before: liveElsewhere, entry: stored(liveElsewhere, { hidden: true }) }), 'hidden'],
    ['a local change that shows an instance again is nothing', change({ kind: 'local', before: live, entry: stored(live) }), null],
    ['a replicated write is counted by the peer that made it', change({ origin: 'remote' }), null],
    ['a replicated delete too', change({ origin: 'remote', before: live, entry: stored(cancelled) }), null],
  ])('%s', (_name, input, expected) => {
    expect(classifyChange(input)).toBe(expected);
  });
});
