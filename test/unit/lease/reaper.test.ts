import { describe, expect, it } from 'vitest';
import { orphanSweeper, scanLeases, type MembershipView } from '../../../src/lease/reaper.js';
import type { ServiceEntries } from '../../../src/registry/store.js';
import type { StoredInstance } from '../../../src/registry/types.js';
import type { RegistrationInput } from '../../../src/registry/validate.js';
import { createTestNode } from '../../support/node.js';
import { record, stored } from '../../support/records.js';

function input(instanceId: string, leaseDurationMs = 30_000): RegistrationInput {
  return {
    namespace: 'default',
    service: 'orders',
    instanceId,
    data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
    leaseDurationMs,
  };
}

describe('Reaper on one peer', () => {
  it('evicts a dead instance after its lease ends and within lease + one reaper interval', async () => {
    const { clock, node } = await createTestNode();
    node.registry.register(input('dead'));
    const lastHeartbeatMs = clock.nowMs();
    let evictedAtMs: number | undefined;
    node.store.onChange((change) => {
      if (change.entry.record.deleted === 'evict') evictedAtMs = clock.nowMs();
    });
    await clock.advance(29_999);
    expect(evictedAtMs).toBeUndefined();
    expect(node.registry.find(input('dead'))).toBeDefined();
    await clock.advanceUntil(() => evictedAtMs !== undefined, 5_000, 100);
    expect(evictedAtMs! - lastHeartbeatMs).toBeGreaterThanOrEqual(30_000);
    expect(evictedAtMs! - lastHeartbeatMs).toBeLessThanOrEqual(30_000 + node.config.cluster.evictionIntervalMs);
    expect(node.registry.find(input('dead'))).toBeUndefined();
  });

  it('keeps an instance that heartbeats', async () => {
    const { clock, node } = await createTestNode();
    node.registry.register(input('alive'));
    for (let i = 0; i < 30; i++) {
      await clock.advance(10_000);
      node.registry.heartbeat(input('alive'));
    }
    expect(node.registry.find(input('alive'))?.record.deleted).toBeNull();
  });

  it('honours a lease the client asked for', async () => {
    const { clock, node } = await createTestNode();
    node.registry.register(input('short', 2_000));
    await clock.advance(1_900);
    expect(node.registry.find(input('short'))).toBeDefined();
    await clock.advance(1_200);
    expect(node.registry.find(input('short'))).toBeUndefined();
  });

  it('drops tombstones once their TTL has passed', async () => {
    const { clock, node } = await createTestNode();
    node.registry.register(input('gone'));
    node.registry.cancel(input('gone'));
    expect(node.store.size).toBe(1);
    await clock.advance(node.config.cluster.tombstoneTtlMs + 1_000);
    expect(node.store.size).toBe(0);
    expect(node.store.getService('default', 'orders')).toBeUndefined();
  });

  it('stops when told to', async () => {
    const { clock, node } = await createTestNode();
    node.registry.register(input('x'));
    await node.stop();
    await clock.advance(60_000);
    expect(node.registry.find(input('x'))).toBeDefined();
  });
});

/** Stored instances grouped as the store holds them. */
function asServices(entries: StoredInstance[]): ServiceEntries[] {
  const byService = new Map<string, ServiceEntries>();
  for (const entry of entries) {
    const key = `${entry.record.namespace}/${entry.record.service}`;
    let service = byService.get(key);
    if (!service) byService.set(key, (service = { namespace: entry.record.namespace, service: entry.record.service, revision: 0, liveCount: 0, instances: new Map() }));
    service.instances.set(entry.record.instanceId, entry);
  }
  return [...byService.values()];
}

describe('scanLeases', () => {
  const nowMs = 100_000;
  const membership = (up: string[], downSince: Record<string, number> = {}): MembershipView => ({
    isUp: (id) => up.includes(id),
    downSinceMs: (id) => (up.includes(id) ? null : (downSince[id] ?? 0)),
    livePeerIds: () => up,
  });
  const context = (up: MembershipView) => ({
    nowMs,
    selfId: 'a',
    membership: up,
    tombstoneTtlMs: 60_000,
    orphanTimeoutMs: 50_000,
    renewalWindowMs: 60_000,
    heartbeatIntervalMs: 10_000,
  });
  const lists = ['expiredOwned', 'expiredForeign', 'orphans', 'expiredTombstones'] as const;

  it.each([
    ['own, lease live', stored(record({ peerId: 'a' }), { leaseExpiresAtMs: nowMs + 1 }), ['a'], 'none'],
    ['own, lease over', stored(record({ peerId: 'a' }), { leaseExpiresAtMs: nowMs }), ['a'], 'expiredOwned'],
    ['foreign, owner up, local lease over', stored(record({ peerId: 'b' }), { leaseExpiresAtMs: 0 }), ['a', 'b'], 'none'],
    ['foreign, owner down, grace live', stored(record({ peerId: 'b' }), { leaseExpiresAtMs: nowMs + 1 }), ['a'], 'none'],
    ['foreign, owner down, grace over', stored(record({ peerId: 'b' }), { leaseExpiresAtMs: nowMs }), ['a'], 'expiredForeign'],
    ['hidden, owner down past the orphan timeout', stored(record({ peerId: 'b' }), { hidden: true }), ['a'], 'orphans'],
    ['hidden, but this peer is not the sweeper', stored(record({ peerId: 'c' }), { hidden: true }), ['0', 'a'], 'none'],
    ['tombstone within its TTL', stored(record({ peerId: 'a', wallMs: 50_000, deleted: 'cancel' })), ['a'], 'none'],
    ['tombstone past its TTL', stored(record({ peerId: 'a', wallMs: 40_000, deleted: 'cancel' })), ['a'], 'expiredTombstones'],
  ] as const)('%s', (_name, entry, up, bucket) => {
    const scan = scanLeases(asServices([entry]), context(membership([...up])));
    const found = lists.filter((name) => scan[name].length > 0);
    expect(found).toEqual(bucket === 'none' ? [] : [bucket]);
  });

  it('waits for the orphan timeout', () => {
    const entry = stored(record({ peerId: 'b' }), { hidden: true });
    expect(scanLeases(asServices([entry]), context(membership(['a'], { b: 60_000 }))).orphans).toEqual([]);
    expect(scanLeases(asServices([entry]), context(membership(['a'], { b: 50_000 }))).orphans).toEqual([entry]);
  });

  it('chooses the lowest live id as the orphan sweeper', () => {
    expect(orphanSweeper(['peer-c', 'peer-a', 'peer-b'])).toBe('peer-a');
    expect(orphanSweeper([])).toBeUndefined();
  });
});
