import { describe, expect, it } from 'vitest';
import { combinedStamp, stampHolds } from '../../../src/views/stable-views.js';
import { applicationOf } from '../../../src/app/application.js';
import { serviceSummaries } from '../../../src/http/namespace-slices.js';
import { createTestNode } from '../../support/node.js';

const reg = (instanceId: string, leaseDurationMs = 30_000) => ({
  namespace: 'default',
  service: 'orders',
  instanceId,
  data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: {} },
  leaseDurationMs,
});

describe('stable views', () => {
  it('outlive the 1 s rebuilds of the native view while nothing served can change, and share their encodings', async () => {
    const { node, clock } = await createTestNode();
    node.registry.register(reg('a'));
    const first = node.views.stable('default', 'orders');
    let builds = 0;
    const encode = (view = node.views.stable('default', 'orders')) => node.views.stableEncoding(view, 'ids', (v) => (builds += 1, v.served.map((e) => e.record.instanceId).join()));
    expect(encode()).toBe('a');
    await clock.advance(5_000);
    expect(node.views.get('default', 'orders').builtAtMs).toBe(clock.nowMs());
    expect(node.views.stable('default', 'orders')).toBe(first);
    expect(encode()).toBe('a');
    expect(builds).toBe(1);
    node.registry.register(reg('b'));
    expect(encode()).toBe('a,b');
    expect(builds).toBe(2);
  });

  it('are sorted by instance id when first read in order, and counting them never sorts', async () => {
    const { node } = await createTestNode();
    for (const id of ['c', 'a', 'd', 'b']) node.registry.register(reg(id));
    node.registry.register({ ...reg('x'), service: 'payments' });
    const view = node.views.stable('default', 'orders');
    const ids = (instances: readonly { record: { instanceId: string } }[]) => instances.map((e) => e.record.instanceId);
    const reads = applicationOf(node).reads;
    expect(reads.countsOf(view, null)).toEqual({ instances: 4, up: 4 });
    expect(await serviceSummaries(reads, 'default', null)).toEqual([
      { service: 'orders', instances: 4, up: 4 },
      { service: 'payments', instances: 1, up: 1 },
    ]);
    // Counted from this same view, in the store's order, and not sorted for it.
    expect(node.views.stable('default', 'orders')).toBe(view);
    expect(ids(view.servedInAnyOrder)).toEqual(['c', 'a', 'd', 'b']);
    expect(ids(view.served)).toEqual(['a', 'b', 'c', 'd']);
    // Sorted once, in place: both read the same instances in order from then on.
    expect(view.servedInAnyOrder).toBe(view.served);
  });

  it('keep no view for a name the store does not hold, however many names are asked', async () => {
    const { node } = await createTestNode();
    node.registry.register(reg('a'));
    const kept = () => (node.views as unknown as { stableViews: { keptCount: number } }).stableViews.keptCount;
    expect(node.views.stable('default', 'orders').served).toHaveLength(1);
    for (let i = 0; i < 1_000; i++) {
      const view = node.views.stable('default', `nobody-${i}`);
      expect(view.served).toEqual([]);
      // Its encodings are built for the caller, never kept either.
      expect(node.views.stableEncoding(view, 'ids', (v) => v.served.length)).toBe(0);
    }
    expect(kept()).toBe(1);
    // A name registered later is kept as any other.
    node.registry.register({ ...reg('b'), service: 'nobody-7' });
    expect(node.views.stable('default', 'nobody-7').served).toHaveLength(1);
    expect(kept()).toBe(2);
  });

  it('are rebuilt when a served lease reaches its end, even before the reaper acts', async () => {
    const { node, clock } = await createTestNode({ file: { cluster: { evictionIntervalMs: 60_000 } } });
    node.registry.register(reg('short', 5_000));
    node.registry.register(reg('long', 60_000));
    const first = node.views.stable('default', 'orders');
    const listed = () => node.views.get('default', 'orders').served.map((e) => e.record.instanceId);
    expect(listed()).toEqual(['long', 'short']);
    await clock.advance(4_999);
    expect(node.views.stable('default', 'orders')).toBe(first);
    await clock.advance(1);
    const second = node.views.stable('default', 'orders');
    expect(second).not.toBe(first);
    // Not served any more (expired) unless an eviction guard holds it: a fresh build decides.
    expect(second.served.map((e) => e.record.instanceId)).toEqual(listed());
  });

  it('a stamp no longer holds when an owner goes down or up, or a guard turns on', () => {
    const up = new Set(['peer-2']);
    const leases = (nowMs: number, guard = false) => ({
      nowMs,
      selfId: 'peer-1',
      liveness: { isUp: (peer: string) => up.has(peer) },
      guards: { suspendOwnedExpiry: guard, holdDownOwners: false },
    });
    const stamp = { suspendOwnedExpiry: false, holdDownOwners: false, owners: ['peer-2'], ownersUp: [true], servedUntilMs: 1_000 };
    expect(stampHolds(stamp, leases(999))).toBe(true);
    expect(stampHolds(stamp, leases(1_000))).toBe(false);
    expect(stampHolds(stamp, leases(10, true))).toBe(false);
    up.delete('peer-2');
    expect(stampHolds(stamp, leases(10))).toBe(false);
  });

  it('combines the stamps of many views into one that holds while every one of them would', () => {
    const stamp = (owners: string[], ownersUp: boolean[], servedUntilMs: number, guard = false) => ({ suspendOwnedExpiry: guard, holdDownOwners: false, owners, ownersUp, servedUntilMs });
    const combined = combinedStamp([stamp(['peer-2'], [true], 5_000), stamp(['peer-3', 'peer-2'], [false, true], 2_000), stamp([], [], Infinity)]);
    expect(combined).toEqual({ suspendOwnedExpiry: false, holdDownOwners: false, owners: ['peer-2', 'peer-3'], ownersUp: [true, false], servedUntilMs: 2_000 });
    const up = new Set(['peer-2']);
    const leases = (nowMs: number) => ({ nowMs, selfId: 'peer-1', liveness: { isUp: (peer: string) => up.has(peer) }, guards: { suspendOwnedExpiry: false, holdDownOwners: false } });
    expect(stampHolds(combined!, leases(1_999))).toBe(true);
    expect(stampHolds(combined!, leases(2_000))).toBe(false);
    up.add('peer-3');
    expect(stampHolds(combined!, leases(10))).toBe(false);
    // Views taken across a change disagree: nothing to keep.
    expect(combinedStamp([stamp(['peer-2'], [true], 5_000), stamp(['peer-2'], [false], 5_000)])).toBeUndefined();
    expect(combinedStamp([stamp([], [], 5_000), stamp([], [], 5_000, true)])).toBeUndefined();
    expect(combinedStamp([stamp([], [], 5_000), undefined])).toBeUndefined();
    expect(stampHolds(combinedStamp([])!, leases(10))).toBe(true);
  });
});
