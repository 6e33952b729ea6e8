import { describe, expect, it } from 'vitest';
import { instance } from '../../support/cluster.js';
import { expectRegistryError } from '../../support/errors.js';
import { createTestNode } from '../../support/node.js';
import { record } from '../../support/records.js';

async function setup(limits: Record<string, number>) {
  const { clock, node } = await createTestNode({ start: false, file: { limits } });
  return { clock, node, registry: node.registry };
}

describe('instance quotas', () => {
  it('refuses a new instance beyond the per-service limit, and changes nothing', async () => {
    const { node, registry } = await setup({ instancesPerServiceMax: 2 });
    registry.register(instance('a'));
    registry.register(instance('b'));
    const revision = node.store.revision;
    const error = expectRegistryError(() => registry.register(instance('c')), 'REG_ERR_QUOTA_EXCEEDED');
    expect(error.status).toBe(409);
    expect(error.message).toBe('service orders in namespace default already holds 2 instances, the most limits.instancesPerServiceMax allows: raise it, or cancel instances, to register more');
    expect(node.store.revision).toBe(revision);
    // Another service, a re-registration and a changed re-registration still work.
    registry.register(instance('c', { service: 'billing' }));
    expect(registry.register(instance('a')).created).toBe(false);
    registry.register(instance('b', { data: { ...instance('b').data, port: 9090 } }));
  });

  it('frees room when an instance is cancelled, and counts a tombstone as nothing', async () => {
    const { registry } = await setup({ instancesPerServiceMax: 1 });
    registry.register(instance('a'));
    registry.cancel(instance('a'));
    expect(registry.register(instance('b')).created).toBe(true);
    expectRegistryError(() => registry.register(instance('a')), 'REG_ERR_QUOTA_EXCEEDED');
  });

  it('refuses a new instance beyond the per-namespace limit, whatever its service', async () => {
    const { node, registry } = await setup({ instancesPerNamespaceMax: 2 });
    registry.register(instance('a', { service: 's1' }));
    registry.register(instance('b', { service: 's2' }));
    const error = expectRegistryError(() => registry.register(instance('c', { service: 's3' })), 'REG_ERR_QUOTA_EXCEEDED');
    expect(error.message).toBe('namespace default already holds 2 instances, the most limits.instancesPerNamespaceMax allows: raise it, or cancel instances, to register more');
    registry.register(instance('c', { service: 's3', namespace: 'other' }));
    expect(node.store.liveCountOfNamespace('default')).toBe(2);
    expect(node.store.liveCountOfNamespace('other')).toBe(1);
  });

  it('by default fit a namespace of a 100,000-instance fleet ten times over', async () => {
    const { node } = await createTestNode({ start: false });
    expect(node.config.limits.instancesPerNamespaceMax).toBe(1_000_000);
  });

  it('never refuses a replicated write: the peer that accepted it checked its own quota', async () => {
    const { clock, node, registry } = await setup({ instancesPerServiceMax: 1 });
    registry.register(instance('a'));
    const decision = registry.applyRemote(record({ wallMs: clock.nowMs() + 1, peerId: 'peer-9', instanceId: 'remote' }), 30_000);
    expect(decision).toBe('apply');
    expect(node.store.getService('default', 'orders')?.liveCount).toBe(2);
  });

  it('keeps the counts right through purges and remote deletes', async () => {
    const { clock, node, registry } = await setup({});
    registry.register(instance('a'));
    registry.register(instance('b'));
    registry.cancel(instance('a'));
    registry.applyRemote({ ...record({ wallMs: clock.nowMs() + 10, peerId: 'peer-9', instanceId: 'b' }), deleted: 'cancel' }, 0);
    expect(node.store.liveCountOfNamespace('default')).toBe(0);
    node.store.purge(instance('a'));
    expect(node.store.getService('default', 'orders')?.liveCount).toBe(0);
  });
});
