import { describe, expect, it } from 'vitest';
import { OFFSET_LIMIT_MS, PRUNE_SLICE_ENTRIES, REBASE_AFTER_MS, RecentChanges } from '../../../src/eureka/recent-changes.js';
import { createTestNode } from '../../support/node.js';
import { eurekaData } from './fixtures.js';

async function setup(windowMs = 180_000, rebaseEarlyMaxEntries?: number) {
  const { clock, node } = await createTestNode({ start: false });
  const recent = new RecentChanges(
    { clock, store: node.store, leaseView: () => node.registry.leaseView() },
    { windowMs, namespace: 'default', rebaseEarlyMaxEntries },
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
  describe('times kept as offsets from a moving origin', () => {
    /**
     * A window whose own clock is moved by `jump` (days at a time, without firing days of the
     * node's timers); the node's clock stays where it is.
     */
    async function jumpingWindow(rebaseEarlyMaxEntries?: number) {
      const { clock, node } = await createTestNode({ start: false });
      let shiftMs = 0;
      const windowClock = { nowMs: () => clock.nowMs() + shiftMs, setTimeout: clock.setTimeout.bind(clock), setInterval: clock.setInterval.bind(clock) };
      const recent = new RecentChanges(
        { clock: windowClock, store: node.store, leaseView: () => node.registry.leaseView() },
        { windowMs: 180_000, namespace: 'default', rebaseEarlyMaxEntries },
      );
      recent.start();
      const register = (instanceId: string) =>
        node.registry.register({ namespace: 'default', service: 'ORDERS', instanceId, data: eurekaData(), leaseDurationMs: 600_000 });
      const jump = (ms: number) => (shiftMs += ms);
      /** The window's changes as `[instanceId, ms before now, action]`. */
      const ages = () => recent.changes().map((change) => [change.record.instanceId, windowClock.nowMs() - change.atMs, change.action]);
      return { node, recent, register, jump, ages };
    }

    it('moves its origin past REBASE_AFTER_MS while the window is small, each change keeping its time and action', async () => {
      const { node, recent, register, jump, ages } = await jumpingWindow();
      register('a');
      jump(REBASE_AFTER_MS - 60_000);
      register('b');
      node.registry.cancel({ namespace: 'default', service: 'ORDERS', instanceId: 'b' });
      register('c');
      jump(60_001);
      // Past REBASE_AFTER_MS from the first change: this one moves the origin, and a (days old) is dropped.
      register('d');
      expect(ages()).toEqual([
        ['b', 60_001, 'DELETED'],
        ['c', 60_001, 'ADDED'],
        ['d', 0, 'ADDED'],
      ]);
      expect(recent.size).toBe(3);
      jump(119_999);
      register('e');
      expect(ages().map(([id]) => id)).toEqual(['d', 'e']);
    });

    it('waits for OFFSET_LIMIT_MS when the window is fuller than the early limit, and then moves it anyway', async () => {
      const { recent, register, jump, ages } = await jumpingWindow(1);
      register('a');
      jump(REBASE_AFTER_MS);
      register('b');
      register('c');
      jump(OFFSET_LIMIT_MS - REBASE_AFTER_MS - 100_000);
      register('d');
      // Two entries or more held: no early move, and offsets past REBASE_AFTER_MS read right.
      expect(ages()).toEqual([['d', 0, 'ADDED']]);
      register('e');
      jump(100_001);
      // Past OFFSET_LIMIT_MS: moved whatever the size.
      register('f');
      expect(ages()).toEqual([
        ['d', 100_001, 'ADDED'],
        ['e', 100_001, 'ADDED'],
        ['f', 0, 'ADDED'],
      ]);
      expect(recent.size).toBe(3);
      jump(OFFSET_LIMIT_MS);
      register('g');
      expect(ages()).toEqual([['g', 0, 'ADDED']]);
    });

    it('reads right, dropping what it cannot reach, when its clock is set back by days', async () => {
      const { register, jump, ages } = await jumpingWindow();
      register('a');
      jump(1_000);
      register('b');
      jump(-(OFFSET_LIMIT_MS + 11_000));
      register('c');
      // a and b are days ahead of the window's clock now: dropped by the move, not kept at a wrong time.
      expect(ages()).toEqual([['c', 0, 'ADDED']]);
      jump(10_000);
      register('d');
      expect(ages()).toEqual([
        ['c', 10_000, 'ADDED'],
        ['d', 0, 'ADDED'],
      ]);
    });
  });
});
