import { describe, expect, it } from 'vitest';
import { InstanceStore } from '../../../src/registry/store.js';
import { SHARED_METADATA_MIN_ENTRIES, SharedValues } from '../../../src/registry/shared-values.js';
import { record } from '../../support/records.js';

const lease = { leaseExpiresAtMs: 5_000, heardUntilMs: 4_000, hidden: false, held: false, ownedSinceMs: 1_000 };
/** A fresh object per call, as a parsed request or batch brings. */
const metadata = (build: string) => ({ version: '1.4.2', team: 'payments', build });
const copy = (text: string) => (' ' + text).slice(1);

describe('InstanceStore: shared metadata, zones, groups and owners', () => {
  it('stores equal metadata maps, zones, groups and owners of different records as one object or string, unchanged in content', () => {
    const store = new InstanceStore(16);
    const a = store.write(record({ instanceId: 'i-1', data: { ...record().data, zone: copy('eu-central-1a'), group: copy('payments-group'), metadata: metadata('b1') } }), lease, 'local');
    const b = store.write(record({ instanceId: 'i-2', data: { ...record().data, zone: copy('eu-central-1a'), group: copy('payments-group'), metadata: metadata('b1') } }), lease, 'local');
    const c = store.write(record({ instanceId: 'i-3', data: { ...record().data, metadata: metadata('b2') } }), lease, 'local');
    expect(b.record.data.metadata).toBe(a.record.data.metadata);
    expect(b.record.data.metadata).toEqual(metadata('b1'));
    expect(Object.keys(b.record.data.metadata)).toEqual(['version', 'team', 'build']);
    expect(c.record.data.metadata).not.toBe(a.record.data.metadata);
    expect(c.record.data.metadata).toEqual(metadata('b2'));
    expect(b.record.data.zone).toBe('eu-central-1a');
    expect(b.record.data.group).toBe('payments-group');
    expect(store.shared.metadataEntries).toBe(2);
  });

  it('keeps maps in a different key order apart (their encodings differ)', () => {
    const store = new InstanceStore(16);
    const a = store.write(record({ instanceId: 'i-1', data: { ...record().data, metadata: { x: '1', y: '2' } } }), lease, 'local');
    const b = store.write(record({ instanceId: 'i-2', data: { ...record().data, metadata: { y: '2', x: '1' } } }), lease, 'local');
    expect(b.record.data.metadata).not.toBe(a.record.data.metadata);
    expect(Object.keys(b.record.data.metadata)).toEqual(['y', 'x']);
  });

  it('drops a shared map when the last record holding it is replaced or purged, and keeps it while one does', () => {
    const store = new InstanceStore(16);
    store.write(record({ instanceId: 'i-1', data: { ...record().data, metadata: metadata('b1') } }), lease, 'local');
    store.write(record({ instanceId: 'i-2', data: { ...record().data, metadata: metadata('b1') } }), lease, 'local');
    expect(store.shared.metadataEntries).toBe(1);
    // i-1 written again with another map: b1 is still held by i-2.
    store.write(record({ instanceId: 'i-1', wallMs: 2_000, data: { ...record().data, metadata: metadata('b2') } }), lease, 'local');
    expect(store.shared.metadataEntries).toBe(2);
    // i-2 becomes a tombstone keeping its data, then is purged: b1 goes with it.
    const tombstone = store.write(record({ instanceId: 'i-2', wallMs: 2_000, deleted: 'cancel', data: { ...record().data, metadata: metadata('b1') } }), lease, 'local');
    expect(store.shared.metadataEntries).toBe(2);
    store.purge(tombstone.record);
    expect(store.shared.metadataEntries).toBe(1);
    // A record written again with the very data object it holds (a takeover) keeps its one hold.
    const entry = store.get({ namespace: 'default', service: 'orders', instanceId: 'i-1' })!;
    store.write({ ...entry.record, owner: 'b' }, lease, 'local');
    store.purge(entry.record);
    expect(store.shared.metadataEntries).toBe(0);
  });

  it('counts a run of records with one map on its entry, and shares an equal map again in a new entry once the run is gone', () => {
    const store = new InstanceStore(16);
    const run = ['i-1', 'i-2', 'i-3'].map((instanceId) => store.write(record({ instanceId, data: { ...record().data, metadata: metadata('b1') } }), lease, 'local'));
    expect(new Set(run.map((entry) => entry.record.data.metadata)).size).toBe(1);
    expect(store.shared.metadataEntries).toBe(1);
    for (const entry of run.slice(0, 2)) store.purge(entry.record);
    expect(store.shared.metadataEntries).toBe(1);
    store.purge(run[2]!.record);
    expect(store.shared.metadataEntries).toBe(0);
    const again = store.write(record({ instanceId: 'i-4', data: { ...record().data, metadata: metadata('b1') } }), lease, 'local');
    expect(store.shared.metadataEntries).toBe(1);
    expect(again.record.data.metadata).not.toBe(run[0]!.record.data.metadata);
    const next = store.write(record({ instanceId: 'i-5', data: { ...record().data, metadata: metadata('b1') } }), lease, 'local');
    expect(next.record.data.metadata).toBe(again.record.data.metadata);
    store.purge(again.record);
    store.purge(next.record);
    expect(store.shared.metadataEntries).toBe(0);
  });

  it('stops sharing new maps past its bound, and a private map released changes no count', () => {
    const shared = new SharedValues();
    for (let i = 0; i < SHARED_METADATA_MIN_ENTRIES; i++) shared.adopt(record({ instanceId: `i-${i}`, data: { ...record().data, metadata: metadata(`b${i}`) } }), i);
    expect(shared.metadataEntries).toBe(SHARED_METADATA_MIN_ENTRIES);
    const own = record({ instanceId: 'own', data: { ...record().data, metadata: metadata('own') } });
    shared.adopt(own, SHARED_METADATA_MIN_ENTRIES);
    expect(shared.metadataEntries).toBe(SHARED_METADATA_MIN_ENTRIES);
    // Equal to a shared map but not that object (it came while the table was full): releasing it frees nothing.
    const twin = record({ instanceId: 'twin', data: { ...record().data, metadata: metadata('b0') } });
    shared.release(twin);
    const holder = record({ instanceId: 'holder', data: { ...record().data, metadata: metadata('b0') } });
    shared.adopt(holder, 0);
    shared.release(holder);
    expect(shared.metadataEntries).toBe(SHARED_METADATA_MIN_ENTRIES);
  });

  it('gives a new version with equal metadata the very map of the record it replaces, and lets go of the old one otherwise', () => {
    const shared = new SharedValues();
    const first = record({ data: { ...record().data, metadata: metadata('b1') } });
    shared.adopt(first, 0);
    // Equal content, another object: takes over first's map and hold.
    const second = record({ wallMs: 2_000, data: { ...record().data, metadata: metadata('b1') } });
    shared.adopt(second, 1, first);
    expect(second.data.metadata).toBe(first.data.metadata);
    expect(shared.metadataEntries).toBe(1);
    // Same values in another key order is another encoding: not taken over.
    const reordered = record({ wallMs: 3_000, data: { ...record().data, metadata: { build: 'b1', team: 'payments', version: '1.4.2' } } });
    shared.adopt(reordered, 1, second);
    expect(reordered.data.metadata).not.toBe(second.data.metadata);
    expect(shared.metadataEntries).toBe(1);
    shared.release(reordered);
    expect(shared.metadataEntries).toBe(0);
  });

  it('forgets zones, groups and owners with the last record holding them, so a churned registry keeps none of the gone ones', () => {
    const store = new InstanceStore(16);
    const ROUNDS = 5;
    const PER_ROUND = 40;
    for (let round = 0; round < ROUNDS; round++) {
      // Each round: new instances in zones, groups and under owners of their own (peers replaced, zones renamed).
      const entries = [];
      for (let i = 0; i < PER_ROUND; i++) {
        const data = { ...record().data, zone: copy(`zone-${round}-${i % 4}`), group: copy(`group-${round}-${i % 2}`), metadata: metadata(`b${round}`) };
        entries.push(store.write(record({ instanceId: `r${round}-i${i}`, peerId: `peer-${round}-${i % 3}`, data }), lease, 'local'));
      }
      // 4 zones, 2 groups and 3 owners of this round are held now, none of earlier rounds.
      expect(store.shared.stringEntries).toBe(4 + 2 + 3);
      const zones = new Set(entries.map((entry) => entry.record.data.zone));
      expect(zones).toEqual(new Set([0, 1, 2, 3].map((i) => `zone-${round}-${i}`)));
      // Equal values are one string: the entries of a zone hold what the table holds.
      expect(entries[4]!.record.data.zone).toBe(entries[0]!.record.data.zone);
      // Cancelled (tombstones keep their data and holds), then purged.
      for (const entry of entries) {
        const tombstone = store.write({ ...entry.record, deleted: 'cancel', version: `${entry.record.version}x` }, lease, 'local');
        expect(tombstone.record.data.zone).toBe(entry.record.data.zone);
      }
      expect(store.shared.stringEntries).toBe(4 + 2 + 3);
      for (const entry of entries) store.purge(entry.record);
      expect(store.shared.stringEntries).toBe(0);
      expect(store.shared.metadataEntries).toBe(0);
    }
  });

  it('moves the holds of a record written again with another zone, group or owner', () => {
    const shared = new SharedValues();
    const first = record({ peerId: 'peer-1', data: { ...record().data, zone: 'z1', group: 'g1' } });
    const other = record({ instanceId: 'i-2', peerId: 'peer-1', data: { ...record().data, zone: 'z1' } });
    shared.adopt(first, 0);
    shared.adopt(other, 1);
    // z1, g1, peer-1
    expect(shared.stringEntries).toBe(3);
    const second = record({ wallMs: 2_000, peerId: 'peer-2', data: { ...record().data, zone: 'z2' } });
    shared.adopt(second, 2, first);
    expect(second.data.group).toBeUndefined();
    expect('group' in second.data).toBe(false);
    // z1 and peer-1 still held by `other`; g1 gone; z2 and peer-2 added.
    expect(shared.stringEntries).toBe(4);
    shared.release(other);
    expect(shared.stringEntries).toBe(2);
    shared.release(second);
    expect(shared.stringEntries).toBe(0);
  });
});
