import { describe, expect, it } from 'vitest';
import { PRUNE_SLICE_ENTRIES, RecentChanges } from '../../../src/eureka/recent-changes.js';
import { createTestNode } from '../../support/node.js';
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
    const { clock, register, ids, node, recent } = await setup();
    register('a');
    await clock.advance(60_000);
    register('b');
    await clock.advance(60_000);
    node.registry.update({ namespace: 'default', service: 'ORDERS', instanceId: 'a' }, { status: 'DOWN' });
    expect(ids()).toEqual(['b:ADDED', 'a:MODIFIED']);
    const startMs = clock.nowMs() - 120_000;
    expect(recent.changes().map((change) => [change.atMs - startMs, change.record])).toEqual([
      [60_000, node.store.get({ namespace: 'default', service: 'ORDERS', instanceId: 'b' })!.record],
      [120_000, node.store.get({ namespace: 'default', service: 'ORDERS', instanceId: 'a' })!.record],
    ]);
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

  it('keeps one entry per instance when its tombstone is purged within the window and it registers again', async () => {
    const { clock, register, ids, node } = await setup();
    const key = { namespace: 'default', service: 'ORDERS', instanceId: 'a' };
    register('a');
    register('b');
    node.registry.cancel(key);
    node.store.purge(key);
    // The purged tombstone's delete is still news for clients that have not fetched since.
    expect(ids()).toEqual(['b:ADDED', 'a:DELETED']);
    await clock.advance(1_000);
    register('a');
    expect(ids()).toEqual(['b:ADDED', 'a:ADDED']);
    node.registry.update(key, { status: 'DOWN' });
    expect(ids()).toEqual(['b:ADDED', 'a:MODIFIED']);
  });

  it('drops a purged tombstone when it leaves the window, and a later register is one entry', async () => {
    const { clock, register, ids, node } = await setup();
    const key = { namespace: 'default', service: 'ORDERS', instanceId: 'a' };
    register('a');
    node.registry.cancel(key);
    node.store.purge(key);
    await clock.advance(180_000);
    expect(ids()).toEqual([]);
    register('a');
    node.registry.cancel(key);
    node.store.purge(key);
    register('a');
    expect(ids()).toEqual(['a:ADDED']);
  });

  it('prunes at most PRUNE_SLICE_ENTRIES per change, the rest on later timer turns, and reads never see what left the window', async () => {
    const { clock, register, ids, recent } = await setup(60_000);
    const count = PRUNE_SLICE_ENTRIES * 3 + 10;
    for (let i = 0; i < count; i++) register(`old-${i}`);
    expect(recent.size).toBe(count);
    // Everything falls out of the window at once; the fake clock's timers have not run yet.
    await clock.advance(60_000);
    register('new');
    // One change dropped one piece only; the others wait for their timer turns.
    expect(recent.size).toBe(count + 1 - PRUNE_SLICE_ENTRIES);
    // A read skips the stale entries and prunes one piece more.
    expect(ids()).toEqual(['new:ADDED']);
    expect(recent.size).toBe(count + 1 - 2 * PRUNE_SLICE_ENTRIES);
    await clock.advance(0);
    await clock.advance(0);
    expect(recent.size).toBe(1);
    expect(ids()).toEqual(['new:ADDED']);
  });

  it('entries() gives what changes() gives, one at a time, and meets an instance changed meanwhile again at the end', async () => {
    const { register, recent, node } = await setup();
    register('a');
    register('b');
    register('c');
    expect([...recent.entries()]).toEqual(recent.changes());
    const reader = recent.entries();
    expect(reader.next().value?.record.instanceId).toBe('a');
    node.registry.update({ namespace: 'default', service: 'ORDERS', instanceId: 'a' }, { status: 'DOWN' });
    const rest = [...reader].map((change) => `${change.record.instanceId}:${change.action}`);
    expect(rest).toEqual(['b:ADDED', 'c:ADDED', 'a:MODIFIED']);
  });

  it('entries() ends after twice the entries it started with, however fast writes move instances to the end', async () => {
    const { register, recent, node } = await setup();
    for (const id of ['a', 'b', 'c']) register(id);
    const met: string[] = [];
    for (const change of recent.entries()) {
      met.push(change.record.instanceId);
      // Every step changes the instance just read again: without the bound this never ends.
      const status = met.filter((id) => id === change.record.instanceId).length % 2 === 1 ? 'DOWN' : 'UP';
      node.registry.update({ namespace: 'default', service: 'ORDERS', instanceId: change.record.instanceId }, { status });
      if (met.length > 100) break;
    }
    expect(met).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });
});
