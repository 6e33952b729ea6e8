import { describe, expect, it } from 'vitest';
import { InstanceStore, type StoreChange } from '../../../src/registry/store.js';
import type { StoredInstance } from '../../../src/registry/types.js';
import { record } from '../../support/records.js';

const lease = { leaseExpiresAtMs: 5_000, heardUntilMs: 4_000, hidden: false, held: true, ownedSinceMs: 1_000 };

describe('InstanceStore', () => {
  it('stores a record with exactly its lease state, revision and bucket, and announces it', () => {
    const store = new InstanceStore(16);
    const changes: StoreChange[] = [];
    store.onChange((change) => changes.push(change));
    const rec = record();
    const entry = store.write(rec, lease, 'local');
    expect(Object.keys(entry).sort()).toEqual(
      ['bucket', 'heardUntilMs', 'held', 'hidden', 'leaseExpiresAtMs', 'ownedSinceMs', 'record', 'revision'].sort(),
    );
    expect(entry).toEqual({ record: rec, ...lease, revision: 1, bucket: entry.bucket });
    expect(store.get(rec)).toBe(entry);
    expect(changes).toEqual([{ kind: 'write', origin: 'local', before: null, entry }]);
  });

  it('tells purge listeners of a purged record only, and not the change feed', () => {
    const store = new InstanceStore(16);
    const purged: StoredInstance[] = [];
    const changes: StoreChange[] = [];
    const stopPurges = store.onPurge((entry) => purged.push(entry));
    store.onChange((change) => changes.push(change));
    const tombstone = store.write(record({ deleted: 'cancel' }), lease, 'local');
    store.purge(record({ instanceId: 'unknown' }));
    expect(purged).toEqual([]);
    store.purge(tombstone.record);
    expect(purged).toEqual([tombstone]);
    expect(changes).toHaveLength(1);
    expect(store.size).toBe(0);
    stopPurges();
    store.purge(store.write(record({ deleted: 'cancel', instanceId: 'i-2' }), lease, 'local').record);
    expect(purged).toHaveLength(1);
  });
});
