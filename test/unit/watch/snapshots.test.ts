import { describe, expect, it } from 'vitest';
import { SNAPSHOT_SERVICE_UNITS, SnapshotCursor, snapshotUnits } from '../../../src/watch/snapshots.js';

describe('SnapshotCursor.ahead', () => {
  // Sorted as strings sort: upper case first.
  const services = ['a', 'b', 'Billing', 'c', 'orders'].sort();
  it.each([
    // next, service, ahead
    [0, 'a', true],
    [0, 'Billing', true],
    [0, 'billing', false],
    [1, 'Billing', false],
    [0, 'aa', false],
    [0, 'zzz', false],
    [2, 'a', false],
    [2, 'b', true],
    [2, 'orders', true],
    [5, 'orders', false],
  ] as const)('next %i: %s ahead is %s', (next, service, ahead) => {
    const cursor = new SnapshotCursor(services, true);
    cursor.next = next;
    expect(cursor.ahead(service)).toBe(ahead);
    // The unsorted list's linear search answers the same.
    const unsorted = new SnapshotCursor(services, false);
    unsorted.next = next;
    expect(unsorted.ahead(service)).toBe(ahead);
  });

  it('is done past its last service', () => {
    const cursor = new SnapshotCursor(['a'], true);
    expect([cursor.done, cursor.nextService]).toEqual([false, 'a']);
    cursor.next = 1;
    expect([cursor.done, cursor.nextService]).toEqual([true, undefined]);
  });

  it('prices a snapshot by its instances plus a service\'s own cost', () => {
    expect(snapshotUnits(0)).toBe(SNAPSHOT_SERVICE_UNITS);
    expect(snapshotUnits(1_000)).toBe(SNAPSHOT_SERVICE_UNITS + 1_000);
  });
});
