import { describe, expect, it } from 'vitest';
import { NO_LEASE, type LocalLeaseState } from '../../../src/registry/store.js';
import { OFFSET_LIMIT_MS, REBASE_REACH_MS, StoredEntry, TimeOrigin } from '../../../src/registry/stored-entry.js';
import { SUB_BUCKETS } from '../../../src/registry/digest.js';
import { record } from '../../support/records.js';

const NOW_MS = 1_764_900_000_000;
const DAY_MS = 86_400_000;

function leaseOf(entry: StoredEntry): LocalLeaseState {
  const { leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs } = entry;
  return { leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs };
}

function entryOf(lease: LocalLeaseState, origin = TimeOrigin.unanchored()): StoredEntry {
  return new StoredEntry(record(), lease, 7, 3, origin);
}

describe('StoredEntry', () => {
  it('is its own record: spreads, JSON and equality see the record it was given and nothing of the lease', () => {
    const given = record({ data: { host: '10.0.0.9', port: 81, securePort: 443, status: 'DOWN', weight: 3, zone: 'z', metadata: { a: 'b' }, group: 'g' }, deleted: 'evict' });
    const entry = new StoredEntry(given, { leaseExpiresAtMs: NOW_MS + 30_000, heardUntilMs: NOW_MS, hidden: true, held: true, ownedSinceMs: NOW_MS }, 7, 3, TimeOrigin.unanchored());
    expect(entry.record).toBe(entry);
    expect(entry.record.data).toBe(given.data);
    expect(Object.keys(entry)).toEqual(Object.keys(given));
    expect(JSON.stringify(entry.record)).toBe(JSON.stringify(given));
    expect({ ...entry.record }).toEqual(given);
    expect({ ...entry.record, version: 'x' }).toEqual({ ...given, version: 'x' });
    expect(entry.record).toEqual(given);
    // Still the lease it was given, behind the record's fields.
    expect([entry.leaseExpiresAtMs, entry.hidden, entry.held, entry.revision, entry.subBucket]).toEqual([NOW_MS + 30_000, true, true, 7, 3]);
  });

  it.each([
    ['an owned lease', { leaseExpiresAtMs: NOW_MS + 30_000, heardUntilMs: NOW_MS + 30_000, hidden: false, held: false, ownedSinceMs: NOW_MS }],
    ['a foreign lease, never heard here', { leaseExpiresAtMs: NOW_MS + 90_000, heardUntilMs: 0, hidden: false, held: true, ownedSinceMs: 0 }],
    ['a tombstone', NO_LEASE],
    ['a hidden one owned for a month', { leaseExpiresAtMs: NOW_MS, heardUntilMs: NOW_MS - 5, hidden: true, held: true, ownedSinceMs: NOW_MS - 30 * DAY_MS }],
    ['a lease until the year 2200', { leaseExpiresAtMs: 7_258_118_400_000, heardUntilMs: NOW_MS, hidden: false, held: false, ownedSinceMs: NOW_MS }],
    ['times near zero (a test clock)', { leaseExpiresAtMs: 31_000, heardUntilMs: 1, hidden: true, held: false, ownedSinceMs: 1_000 }],
    ['negative and fractional times', { leaseExpiresAtMs: 1_000.5, heardUntilMs: -3, hidden: false, held: false, ownedSinceMs: -DAY_MS * 400 }],
    ['the largest safe time', { leaseExpiresAtMs: Number.MAX_SAFE_INTEGER, heardUntilMs: Number.MAX_SAFE_INTEGER, hidden: false, held: false, ownedSinceMs: 1 }],
  ])('reads back exactly the lease it was given: %s', (_name, lease) => {
    const entry = entryOf(lease);
    expect(leaseOf(entry)).toEqual(lease);
    expect(entry.revision).toBe(7);
    expect(entry.subBucket).toBe(3);
  });

  it('reads back every time it is set to, far past and far future included, and the flags apart', () => {
    const entry = entryOf({ leaseExpiresAtMs: NOW_MS + 30_000, heardUntilMs: NOW_MS + 30_000, hidden: false, held: false, ownedSinceMs: NOW_MS });
    for (const timeMs of [0, NOW_MS, NOW_MS + OFFSET_LIMIT_MS, NOW_MS - OFFSET_LIMIT_MS - 1, 1, NOW_MS + 0.25, Number.MAX_SAFE_INTEGER, NOW_MS + 60_000]) {
      entry.leaseExpiresAtMs = timeMs;
      entry.heardUntilMs = timeMs;
      entry.ownedSinceMs = timeMs;
      expect(leaseOf(entry)).toEqual({ leaseExpiresAtMs: timeMs, heardUntilMs: timeMs, hidden: false, held: false, ownedSinceMs: timeMs });
    }
    entry.hidden = true;
    expect([entry.hidden, entry.held]).toEqual([true, false]);
    entry.held = true;
    entry.hidden = false;
    expect([entry.hidden, entry.held]).toEqual([false, true]);
    Object.assign(entry, { hidden: true, held: false, leaseExpiresAtMs: NOW_MS + 5 });
    expect([entry.hidden, entry.held, entry.leaseExpiresAtMs]).toEqual([true, false, NOW_MS + 5]);
  });

  it('keeps its sub-bucket and both flags apart in one field, over every sub-bucket a digest of 65,536 buckets has', () => {
    const last = 65_536 * SUB_BUCKETS - 1;
    for (const subBucket of [0, 1, 3, 4, 4_095, 65_535, last]) {
      for (const [hidden, held] of [[false, false], [true, false], [false, true], [true, true]] as const) {
        const entry = new StoredEntry(record(), { ...NO_LEASE, hidden, held }, 1, subBucket, TimeOrigin.unanchored());
        expect([entry.subBucket, entry.hidden, entry.held]).toEqual([subBucket, hidden, held]);
        entry.hidden = !hidden;
        entry.held = !held;
        expect([entry.subBucket, entry.hidden, entry.held]).toEqual([subBucket, !hidden, !held]);
        expect(typeof StoredEntry.heldFields(entry).bits).toBe('number');
      }
    }
  });

  it('keeps times near its origin as small integers inside the object, and 0 as one shared value', () => {
    const entry = entryOf({ leaseExpiresAtMs: NOW_MS + 30_000, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: NOW_MS });
    const fields = StoredEntry.heldFields(entry);
    expect(fields.leaseExpiresAt).toBe(30_000);
    expect(fields.ownedSince).toBe(0);
    const other = entryOf({ leaseExpiresAtMs: 0, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: 0 }, entry.timeOrigin);
    expect(typeof fields.heardUntil).toBe('object');
    expect(StoredEntry.heldFields(other).heardUntil).toBe(fields.heardUntil);
  });

  it('starts a new origin when time moves past the newest one, and moves an entry over when it needs it', () => {
    const first = entryOf({ leaseExpiresAtMs: NOW_MS + 30_000, heardUntilMs: NOW_MS + 30_000, hidden: false, held: false, ownedSinceMs: NOW_MS });
    const origin = first.timeOrigin;
    expect(origin.originMs).toBe(NOW_MS);
    // A detached entry (replaced in the store, still held by a reader) keeps its origin.
    const detached = entryOf({ leaseExpiresAtMs: NOW_MS + 60_000, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: NOW_MS + 1 }, origin);
    const laterMs = NOW_MS + 20 * DAY_MS;
    first.leaseExpiresAtMs = laterMs;
    expect(first.timeOrigin).not.toBe(origin);
    expect(origin.next).toBe(first.timeOrigin);
    expect(first.timeOrigin.originMs).toBe(laterMs);
    expect(leaseOf(first)).toEqual({ leaseExpiresAtMs: laterMs, heardUntilMs: NOW_MS + 30_000, hidden: false, held: false, ownedSinceMs: NOW_MS });
    expect(leaseOf(detached)).toEqual({ leaseExpiresAtMs: NOW_MS + 60_000, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: NOW_MS + 1 });
    expect(StoredEntry.heldFields(first).leaseExpiresAt).toBe(0);
    // Another entry on the old origin moves to the newest instead of starting a third.
    detached.heardUntilMs = laterMs + 5;
    expect(detached.timeOrigin).toBe(first.timeOrigin);
    expect(leaseOf(detached)).toEqual({ leaseExpiresAtMs: NOW_MS + 60_000, heardUntilMs: laterMs + 5, hidden: false, held: false, ownedSinceMs: NOW_MS + 1 });
    // A new entry built on the old origin lands on the newest.
    expect(entryOf({ ...NO_LEASE, leaseExpiresAtMs: laterMs }, origin).timeOrigin).toBe(first.timeOrigin);
  });

  it('does not move the origin for a time in the past or beyond its reach (an outlier), and reads it back', () => {
    const entry = entryOf({ leaseExpiresAtMs: NOW_MS + 30_000, heardUntilMs: NOW_MS, hidden: false, held: false, ownedSinceMs: NOW_MS });
    const origin = entry.timeOrigin;
    entry.ownedSinceMs = NOW_MS - 40 * DAY_MS;
    entry.leaseExpiresAtMs = NOW_MS + REBASE_REACH_MS + 1;
    expect(entry.timeOrigin).toBe(origin);
    expect(origin.next).toBeNull();
    expect(leaseOf(entry)).toEqual({ leaseExpiresAtMs: NOW_MS + REBASE_REACH_MS + 1, heardUntilMs: NOW_MS, hidden: false, held: false, ownedSinceMs: NOW_MS - 40 * DAY_MS });
  });

  it('anchors a first origin at the first time it sees, however far from zero', () => {
    const origin = TimeOrigin.unanchored();
    const tombstone = entryOf(NO_LEASE, origin);
    expect(tombstone.timeOrigin).toBe(origin);
    const live = entryOf({ leaseExpiresAtMs: NOW_MS + 30_000, heardUntilMs: NOW_MS + 30_000, hidden: false, held: false, ownedSinceMs: NOW_MS }, origin);
    expect(live.timeOrigin.originMs).toBe(NOW_MS);
    expect(live.timeOrigin.anchored).toBe(true);
    expect(origin.newest()).toBe(live.timeOrigin);
    expect(leaseOf(tombstone)).toEqual(NO_LEASE);
  });
});
