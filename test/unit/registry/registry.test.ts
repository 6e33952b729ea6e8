import { describe, expect, it } from 'vitest';
import { compareVersions } from '../../../src/clock/hlc.js';
import { RegistryError } from '../../../src/errors.js';
import type { StoreChange } from '../../../src/registry/store.js';
import type { RegistrationInput } from '../../../src/registry/validate.js';
import { isServed } from '../../../src/registry/visibility.js';
import { record } from '../../support/records.js';
import { createTestNode } from '../../support/node.js';

function input(overrides: Partial<RegistrationInput> = {}): RegistrationInput {
  return {
    namespace: 'default',
    service: 'orders',
    instanceId: 'i-1',
    data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
    leaseDurationMs: 30_000,
    ...overrides,
  };
}

async function setup() {
  const { clock, node } = await createTestNode({ start: false });
  const changes: StoreChange[] = [];
  node.store.onChange((change) => changes.push(change));
  return { clock, node, registry: node.registry, changes };
}

describe('Registry', () => {
  it('registers with a version owned by this peer and a full lease', async () => {
    const { clock, registry, changes } = await setup();
    const { entry, created } = registry.register(input());
    expect(created).toBe(true);
    expect(entry.record.owner).toBe('peer-1');
    expect(entry.leaseExpiresAtMs).toBe(clock.nowMs() + 30_000);
    expect(changes.map((c) => [c.kind, c.origin])).toEqual([['write', 'local']]);
  });

  it('re-registers with identical data as a lease renewal, without a new version', async () => {
    const { clock, registry, changes } = await setup();
    const first = registry.register(input()).entry.record.version;
    await clock.advance(5_000);
    const again = registry.register(input());
    expect(again.created).toBe(false);
    expect(again.entry.record.version).toBe(first);
    expect(again.entry.leaseExpiresAtMs).toBe(clock.nowMs() + 30_000);
    expect(changes).toHaveLength(1);
  });

  it('re-registers with new data as a new write that keeps the registration time', async () => {
    const { clock, registry } = await setup();
    const first = registry.register(input()).entry.record;
    await clock.advance(1_000);
    const again = registry.register(input({ data: { ...input().data, port: 9090 } }));
    expect(again.created).toBe(false);
    expect(compareVersions(first.version, again.entry.record.version)).toBeLessThan(0);
    expect(again.entry.record.registeredAtMs).toBe(first.registeredAtMs);
  });

  it('registers again after a cancel as a new instance', async () => {
    const { registry } = await setup();
    registry.register(input());
    registry.cancel(input());
    expect(registry.register(input()).created).toBe(true);
  });

  it('renews the lease on heartbeat without a write', async () => {
    const { clock, registry, changes } = await setup();
    const { entry } = registry.register(input());
    const version = entry.record.version;
    await clock.advance(20_000);
    registry.heartbeat(input());
    expect(entry.leaseExpiresAtMs).toBe(clock.nowMs() + 30_000);
    expect(entry.record.version).toBe(version);
    expect(changes).toHaveLength(1);
  });

  it('revives an expired lease on heartbeat and announces it', async () => {
    const { clock, registry, node, changes } = await setup();
    const { entry } = registry.register(input());
    await clock.advance(31_000);
    expect(isServed(entry, registry.leaseView())).toBe(false);
    registry.heartbeat(input());
    expect(isServed(entry, registry.leaseView())).toBe(true);
    expect(changes.at(-1)?.kind).toBe('local');
    expect(node.store.revision).toBe(2);
  });

  it.each(['heartbeat', 'cancel'] as const)('answers %s for an unknown instance with REG_ERR_INSTANCE_NOT_FOUND', async (op) => {
    const { registry } = await setup();
    expect(() => registry[op](input())).toThrowError(RegistryError);
    try {
      registry[op](input());
    } catch (error) {
      expect((error as RegistryError).code).toBe('REG_ERR_INSTANCE_NOT_FOUND');
      expect((error as RegistryError).status).toBe(404);
    }
  });

  it('answers a heartbeat for a cancelled instance with 404', async () => {
    const { registry } = await setup();
    registry.register(input());
    registry.cancel(input());
    expect(() => registry.heartbeat(input())).toThrow(/not registered/);
    expect(() => registry.cancel(input())).toThrow(/not registered/);
  });

  it('changes the status with a new version and keeps the owner', async () => {
    const { registry } = await setup();
    const before = registry.register(input()).entry.record;
    const after = registry.update(input(), { status: 'OUT_OF_SERVICE' }).record;
    expect(after.data.status).toBe('OUT_OF_SERVICE');
    expect(after.owner).toBe(before.owner);
    expect(compareVersions(before.version, after.version)).toBeLessThan(0);
  });

  it('does not write when a status change changes nothing', async () => {
    const { registry, changes } = await setup();
    registry.register(input());
    registry.update(input(), { status: 'UP' });
    expect(changes).toHaveLength(1);
  });

  describe('applyRemote', () => {
    it('applies a newer record without re-announcing it as local', async () => {
      const { clock, registry, changes } = await setup();
      const incoming = record({ wallMs: clock.nowMs(), peerId: 'peer-2' });
      expect(registry.applyRemote(incoming, 10_000)).toBe('apply');
      expect(changes.map((c) => c.origin)).toEqual(['remote']);
      expect(registry.find(incoming)?.leaseExpiresAtMs).toBe(clock.nowMs() + 10_000);
    });

    it('makes later local writes newer than a record from a peer whose clock runs ahead', async () => {
      const { clock, registry } = await setup();
      registry.register(input());
      registry.applyRemote(record({ wallMs: clock.nowMs() + 60_000, peerId: 'peer-2', instanceId: 'i-1' }), 1_000);
      const local = registry.update(input(), { status: 'DOWN' });
      expect(local.record.owner).toBe('peer-2');
      expect(local.record.data.status).toBe('DOWN');
    });

    it('takes an instance over when its eviction arrives while a client heartbeats here', async () => {
      const { clock, registry, changes } = await setup();
      registry.applyRemote(record({ wallMs: clock.nowMs(), peerId: 'peer-2' }), 30_000);
      registry.heartbeat(input());
      const eviction = record({ wallMs: clock.nowMs() + 1, peerId: 'peer-2', deleted: 'evict' });
      expect(registry.applyRemote(eviction, 0)).toBe('reassert');
      const entry = registry.find(input());
      expect(entry?.record.owner).toBe('peer-1');
      expect(entry?.record.deleted).toBeNull();
      expect(compareVersions(eviction.version, entry!.record.version)).toBeLessThan(0);
      expect(changes.at(-1)).toMatchObject({ kind: 'write', origin: 'local' });
    });

    it('gives every live instance of a down owner, in every service, one grace period, and nothing else, as no change readers see', async () => {
      const { clock, registry, changes } = await setup();
      const nowMs = clock.nowMs();
      const down = [
        registry.applyRemote(record({ wallMs: nowMs, peerId: 'peer-2', instanceId: 'i-1' }), 1_000),
        registry.applyRemote(record({ wallMs: nowMs, peerId: 'peer-2', instanceId: 'i-2', service: 'billing' }), 1_000),
      ];
      expect(down).toEqual(['apply', 'apply']);
      registry.applyRemote(record({ wallMs: nowMs, peerId: 'peer-3', instanceId: 'i-3' }), 1_000);
      registry.applyRemote(record({ wallMs: nowMs, peerId: 'peer-2', instanceId: 'i-4', deleted: 'cancel' }), 0);
      const key = (instanceId: string, service = 'orders') => ({ namespace: 'default', service, instanceId });
      const tombstone = registry.store.get(key('i-4'))!;
      const before = [key('i-1'), key('i-2', 'billing'), key('i-3')].map((k) => {
        const { leaseExpiresAtMs, revision } = registry.store.get(k)!;
        return { leaseExpiresAtMs, revision };
      });
      const beforeTombstone = { leaseExpiresAtMs: tombstone.leaseExpiresAtMs, revision: tombstone.revision };
      const changeCount = changes.length;

      registry.ownerDown('peer-2');

      const [one, two, other] = [key('i-1'), key('i-2', 'billing'), key('i-3')].map((k) => registry.store.get(k)!);
      // Its lease (30 s) at least, from now: far past the 1 s the sender vouched for.
      expect(one!.leaseExpiresAtMs).toBeGreaterThanOrEqual(nowMs + 30_000);
      expect(two!.leaseExpiresAtMs).toBe(one!.leaseExpiresAtMs);
      expect(other!.leaseExpiresAtMs).toBe(before[2]!.leaseExpiresAtMs);
      expect({ leaseExpiresAtMs: tombstone.leaseExpiresAtMs, revision: tombstone.revision }).toEqual(beforeTombstone);
      expect([one!.revision, two!.revision, other!.revision]).toEqual(before.map((entry) => entry.revision));
      expect(changes).toHaveLength(changeCount);
    });

    it('keeps the grace a down owner\'s instance got here when a newer version of it arrives from a peer that still saw the owner up', async () => {
      // Found by chaos (seed 20261129, 5 peers, `--kills detected --serial`): a status change made
      // on a peer that still saw the owner up came with that peer's view of the lease (one
      // lease), replaced the grace here, and the instance was hidden once that lease ran out.
      const { clock, registry } = await setup();
      const graceMs = 60_000;
      registry.applyRemote(record({ wallMs: clock.nowMs(), peerId: 'peer-2' }), 6_000);
      registry.ownerDown('peer-2');
      const graceUntilMs = registry.find(input())!.leaseExpiresAtMs;
      expect(graceUntilMs).toBeGreaterThanOrEqual(clock.nowMs() + Math.min(graceMs, 15_000));
      const statusChange = record({ wallMs: clock.nowMs() + 1, peerId: 'peer-3' });
      registry.applyRemote({ ...statusChange, owner: 'peer-2', data: { ...statusChange.data, status: 'OUT_OF_SERVICE' } }, 6_000);
      const entry = registry.find(input())!;
      expect(entry.record.data.status).toBe('OUT_OF_SERVICE');
      expect(entry.leaseExpiresAtMs).toBe(graceUntilMs);
      // A new owner brings its own lease: nothing is kept from the old one's grace.
      registry.applyRemote(record({ wallMs: clock.nowMs() + 2, peerId: 'peer-3' }), 6_000);
      expect(registry.find(input())!.leaseExpiresAtMs).toBe(clock.nowMs() + 6_000);
    });
  });
});
