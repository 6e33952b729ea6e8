import { describe, expect, it } from 'vitest';
import { RecentChanges } from '../../../../src/http/eureka/recent-changes.js';
import { createTestNode } from '../../../support/node.js';
import { eurekaData } from './fixtures.js';

async function setup(windowMs = 180_000) {
  const { clock, node } = await createTestNode({ start: false });
  const recent = new RecentChanges(
    { clock, store: node.store, leaseView: () => node.registry.leaseView() },
    { windowMs, namespace: 'default' },
  );
  recent.start();
  const register = (instanceId: string, namespace = 'default', data = eurekaData()) =>
    node.registry.register({ namespace, service: 'ORDERS', instanceId, data, leaseDurationMs: 600_000 });
  const ids = () => recent.changes().map((change) => `${change.record.instanceId}:${change.action}`);
  return { clock, node, recent, register, ids };
}

describe('RecentChanges', () => {
  it('keeps the last change of each instance, in time order, and drops what left the window', async () => {
    const { clock, register, ids, node } = await setup();
    register('a');
    await clock.advance(60_000);
    register('b');
    await clock.advance(60_000);
    node.registry.update({ namespace: 'default', service: 'ORDERS', instanceId: 'a' }, { status: 'DOWN' });
    expect(ids()).toEqual(['b:ADDED', 'a:MODIFIED']);
    await clock.advance(120_000);
    // b changed 180 s ago: out; a changed 120 s ago: in.
    expect(ids()).toEqual(['a:MODIFIED']);
    await clock.advance(60_000);
    expect(ids()).toEqual([]);
  });

  it('records deletes, ignores other namespaces, and stops listening when stopped', async () => {
    const { register, ids, node, recent } = await setup();
    register('a');
    register('x', 'team-a');
    node.registry.cancel({ namespace: 'default', service: 'ORDERS', instanceId: 'a' });
    expect(ids()).toEqual(['a:DELETED']);
    recent.stop();
    register('b');
    expect(ids()).toEqual(['a:DELETED']);
    expect(recent.size).toBe(1);
  });
});
