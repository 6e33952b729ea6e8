import { describe, expect, it } from 'vitest';
import { StoreWalk } from '../../../src/registry/store-walk.js';
import { InstanceStore, type StoreChange } from '../../../src/registry/store.js';
import { instanceKeyString, type StoredInstance } from '../../../src/registry/types.js';
import { subBucketOf } from '../../../src/registry/digest.js';
import { StoredEntry } from '../../../src/registry/stored-entry.js';
import { record } from '../../support/records.js';

const lease = { leaseExpiresAtMs: 5_000, heardUntilMs: 4_000, hidden: false, held: true, ownedSinceMs: 1_000 };

describe('InstanceStore', () => {
  it('stores a record with exactly its lease state, revision and digest sub-bucket, and announces it', () => {
    const store = new InstanceStore(16);
    const changes: StoreChange[] = [];
    store.onChange((change) => changes.push(change));
    const rec = record();
    const entry = store.write(rec, lease, 'local');
    // One class, the entry its own record: its own fields are the record's, in the record's
    // order (the lease is private, behind accessors); a new object, not the one written.
    expect(entry).toBeInstanceOf(StoredEntry);
    expect(entry.record).toBe(entry);
    expect(entry.record).not.toBe(rec);
    expect(Object.keys(entry)).toEqual(Object.keys(rec));
    const { leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs, revision, subBucket } = entry;
    expect({ record: entry.record, leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs, revision, subBucket }).toEqual({
      record: rec,
      ...lease,
      revision: 1,
      subBucket: subBucketOf(instanceKeyString(rec), 16),
    });
    expect(store.get(rec)).toBe(entry);
    expect(changes).toEqual([{ kind: 'write', origin: 'local', before: null, entry }]);
  });

  it('walks every stored instance, tombstones included, in every namespace and service, in turns of any size', () => {
    const store = new InstanceStore(16);
    const written = [
      store.write(record(), lease, 'local'),
      store.write(record({ instanceId: 'i-2', deleted: 'cancel' }), lease, 'local'),
      store.write(record({ service: 'billing' }), lease, 'local'),
      store.write(record({ namespace: 'team-a' }), lease, 'local'),
    ];
    for (const perTurn of [1, 2, 3, Number.POSITIVE_INFINITY]) {
      const walk = new StoreWalk(store.allServices());
      const visited: StoredInstance[] = [];
      let turns = 1;
      while (!walk.step(perTurn, (entry) => visited.push(entry))) turns += 1;
      expect(visited).toHaveLength(written.length);
      expect(new Set(visited)).toEqual(new Set(written));
      // A turn that ends on the last entry leaves one more to find the end.
      expect(turns).toBe(perTurn === Number.POSITIVE_INFINITY ? 1 : Math.floor(written.length / perTurn) + 1);
    }
  });

  it('sets an entry\'s lease end alone when told that readers see no change: no revision, nothing on the change feed', () => {
    const store = new InstanceStore(16);
    const entry = store.write(record(), lease, 'local');
    const changes: StoreChange[] = [];
    store.onChange((change) => changes.push(change));
    store.updateLease(entry, { leaseExpiresAtMs: 9_000 }, false);
    const { leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs, revision } = entry;
    expect({ leaseExpiresAtMs, heardUntilMs, hidden, held, ownedSinceMs, revision }).toEqual({ ...lease, leaseExpiresAtMs: 9_000, revision: 1 });
    expect(changes).toEqual([]);
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

  it('finds services by namespace and name, lists them all, and forgets an emptied service and namespace', () => {
    const store = new InstanceStore(16);
    const a = store.write(record({ namespace: 'team-a', service: 'orders', instanceId: 'i-1' }), lease, 'local');
    store.write(record({ namespace: 'team-b', service: 'orders', instanceId: 'i-1' }), lease, 'local');
    store.write(record({ namespace: 'team-a', service: 'billing', instanceId: 'i-1', deleted: 'cancel' }), lease, 'local');
    expect(store.get({ namespace: 'team-a', service: 'orders', instanceId: 'i-1' })).toBe(a);
    expect(store.get({ namespace: 'team-c', service: 'orders', instanceId: 'i-1' })).toBeUndefined();
    expect([...store.allServices()].map((s) => `${s.namespace}/${s.service}`).sort()).toEqual(['team-a/billing', 'team-a/orders', 'team-b/orders']);
    expect([...store.entries()]).toHaveLength(3);
    store.purge({ namespace: 'team-a', service: 'billing', instanceId: 'i-1' });
    expect(store.getService('team-a', 'billing')).toBeUndefined();
    expect([...store.allServices()].map((s) => `${s.namespace}/${s.service}`).sort()).toEqual(['team-a/orders', 'team-b/orders']);
    store.write(record({ namespace: 'team-b', service: 'orders', instanceId: 'i-1', deleted: 'cancel', version: '0000000003e8.000001.peer-1' }), lease, 'local');
    store.purge({ namespace: 'team-b', service: 'orders', instanceId: 'i-1' });
    expect([...store.allServices()].map((s) => s.namespace)).toEqual(['team-a']);
  });
});

describe('InstanceStore: one service whatever the case of its name', () => {
  it('finds a service and its instances by any case, and stores every record under the name first stored', () => {
    const store = new InstanceStore(16);
    const first = store.write(record({ service: 'Orders', instanceId: 'a' }), lease, 'local');
    const second = store.write(record({ service: 'ORDERS', instanceId: 'b' }), lease, 'remote');
    expect(second.record.service).toBe('Orders');
    expect(store.getService('default', 'orders')?.instances.size).toBe(2);
    expect(store.get({ namespace: 'default', service: 'oRdErS', instanceId: 'a' })).toBe(first);
    expect([...store.allServices()].map((entries) => entries.service)).toEqual(['Orders']);
    store.purge({ namespace: 'default', service: 'ORDERS', instanceId: 'b' });
    store.purge({ namespace: 'default', service: 'orders', instanceId: 'a' });
    expect(store.size).toBe(0);
    expect(store.getService('default', 'Orders')).toBeUndefined();
  });

  it('gives the same digest whatever case each peer stored the name in (anti-entropy agrees)', () => {
    const upper = new InstanceStore(16);
    const lower = new InstanceStore(16);
    upper.write(record({ service: 'ORDERS', instanceId: 'a' }), lease, 'local');
    lower.write(record({ service: 'orders', instanceId: 'a' }), lease, 'local');
    expect(upper.digest.encodeBuckets()).toBe(lower.digest.encodeBuckets());
    expect(upper.digest.rootHash()).toBe(lower.digest.rootHash());
  });
});
