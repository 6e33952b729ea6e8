import { describe, expect, it } from 'vitest';
import { barrierWaitsForSync, periodicSyncMs, snapshotDue } from '../../../src/persistence/sync-policy.js';

describe('sync policies', () => {
  it.each([
    ['always', true, null],
    ['interval', false, 200],
    ['never', false, null],
  ] as const)('%s: the answer waits for an fsync: %s; timer: %s', (policy, waits, timerMs) => {
    expect(barrierWaitsForSync(policy)).toBe(waits);
    expect(periodicSyncMs(policy, 200)).toBe(timerMs);
  });

  const settings = { snapshotLogBytes: 1_000, snapshotIntervalMs: 60_000 };
  it.each([
    [{ bytesSinceSnapshot: 0, recordsSinceSnapshot: 0, msSinceSnapshot: 999_999 }, false],
    [{ bytesSinceSnapshot: 999, recordsSinceSnapshot: 3, msSinceSnapshot: 59_999 }, false],
    [{ bytesSinceSnapshot: 1_000, recordsSinceSnapshot: 3, msSinceSnapshot: 0 }, true],
    [{ bytesSinceSnapshot: 10, recordsSinceSnapshot: 1, msSinceSnapshot: 60_000 }, true],
  ])('a snapshot is due after %j: %s', (progress, due) => {
    expect(snapshotDue(progress, settings)).toBe(due);
  });
});
