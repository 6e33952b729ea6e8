import { describe, expect, it } from 'vitest';
import type { StoreChange } from '../../../src/registry/store.js';
import { createTestNode } from '../../support/node.js';
import { record } from '../../support/records.js';

// The reaper's and the data dir restore's writes go through the registry, the store's one writer.
async function setup() {
  const { clock, node } = await createTestNode({ start: false });
  const changes: StoreChange[] = [];
  node.store.onChange((change) => changes.push(change));
  return { clock, node, registry: node.registry, changes };
}

describe('Registry writes for the reaper and the restore', () => {
  it('holds an instance once: the first hold is announced, a second changes nothing', async () => {
    const { node, registry, changes } = await setup();
    registry.restore(record({ peerId: 'peer-1' }), 1_000);
    const restored = node.store.get(record())!;
    changes.length = 0;
    registry.hold(restored);
    expect(restored.held).toBe(true);
    expect(changes.map((c) => [c.kind, c.origin])).toEqual([['local', 'local']]);
    registry.hold(restored);
    expect(changes).toHaveLength(1);
  });

  it('purges a tombstone off the change feed, told to purge listeners', async () => {
    const { node, registry, changes } = await setup();
    registry.restore(record({ deleted: 'cancel' }), 1_000);
    const purged: string[] = [];
    node.store.onPurge((entry) => purged.push(entry.record.instanceId));
    changes.length = 0;
    registry.purge(node.store.get(record())!);
    expect(node.store.get(record())).toBeUndefined();
    expect(purged).toEqual(['i-1']);
    expect(changes).toEqual([]);
  });

  it('restores a record as origin restore with the lease rules\' grace lease', async () => {
    const { node, registry, changes } = await setup();
    registry.restore(record({ peerId: 'peer-1', leaseDurationMs: 30_000 }), 5_000);
    registry.restore(record({ instanceId: 'i-2', peerId: 'b', leaseDurationMs: 30_000 }), 5_000);
    expect(changes.map((c) => [c.kind, c.origin])).toEqual([['write', 'restore'], ['write', 'restore']]);
    expect(node.store.get(record())).toMatchObject({ leaseExpiresAtMs: 35_000, heardUntilMs: 0, ownedSinceMs: 5_000 });
    expect(node.store.get(record({ instanceId: 'i-2' }))).toMatchObject({ leaseExpiresAtMs: 35_000, ownedSinceMs: 0 });
  });
});
