import { describe, expect, it } from 'vitest';
import { createTestNode } from '../../support/node.js';
import { ServiceViews, type ServiceChange, type ServiceView } from '../../../src/views/service-views.js';
import { SteppedClock } from '../../support/stepped-clock.js';

const reg = (instanceId: string, extra: Record<string, unknown> = {}) => ({
  namespace: 'default',
  service: 'orders',
  instanceId,
  data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: {}, ...extra },
  leaseDurationMs: 30_000,
});

describe('ServiceViews', () => {
  it('shares one view and one encoding between reads until the service changes', async () => {
    const { node } = await createTestNode();
    node.registry.register(reg('a'));
    const first = node.views.get('default', 'orders');
    expect(first.instances.map((i) => i.instanceId)).toEqual(['a']);
    expect(node.views.get('default', 'orders')).toBe(first);
    let builds = 0;
    const encode = () => node.views.encoded('default', 'orders', 'ids', (view) => (builds += 1, view.instances.map((i) => i.instanceId).join()));
    expect(encode()).toBe('a');
    expect(encode()).toBe('a');
    expect(builds).toBe(1);
    node.registry.register(reg('b'));
    expect(encode()).toBe('a,b');
    expect(builds).toBe(2);
  });

  it('answers a reader still holding a replaced view from that view, and keeps nothing for it', async () => {
    const { node } = await createTestNode();
    node.registry.register(reg('a'));
    const old = node.views.get('default', 'orders');
    let builds = 0;
    const ids = (view: typeof old) => node.views.encoding(view, 'ids', (built) => ((builds += 1), built.served.map((e) => e.record.instanceId).join()));
    expect(ids(old)).toBe('a');
    expect(ids(old)).toBe('a');
    expect(builds).toBe(1);
    node.registry.register(reg('b'));
    expect(ids(old)).toBe('a');
    expect(ids(old)).toBe('a');
    expect(builds).toBe(3);
    const fresh = node.views.get('default', 'orders');
    expect(ids(fresh)).toBe('a,b');
    expect(ids(fresh)).toBe('a,b');
    expect(builds).toBe(4);
    node.views.close();
    expect(ids(fresh)).toBe('a,b');
    expect(builds).toBe(5);
  });

  it('rebuilds a view older than its bound even without a change (lease countdowns)', async () => {
    const { node, clock } = await createTestNode();
    node.registry.register(reg('a'));
    const first = node.views.get('default', 'orders');
    await clock.advance(999);
    expect(node.views.get('default', 'orders')).toBe(first);
    await clock.advance(1);
    const second = node.views.get('default', 'orders');
    expect(second).not.toBe(first);
    expect(second.instances[0]!.leaseExpiresInMs).toBe(first.instances[0]!.leaseExpiresInMs - 1_000);
  });

  it('announces every change with the service and its new revision; an unknown service is empty', async () => {
    const { node } = await createTestNode();
    const seen: ServiceChange[] = [];
    node.views.onChange((change) => seen.push(change));
    node.registry.register(reg('a'));
    expect(seen).toEqual([{ namespace: 'default', service: 'orders', revision: node.views.revisionOf('default', 'orders') }]);
    expect(node.views.get('default', 'nothing').instances).toEqual([]);
    expect(node.views.servicesOf('default')).toEqual(['orders']);
  });
});

describe('ServiceViews.servicesOf', () => {
  it('keeps the sorted names of a namespace while no service is made or dropped, and follows each that is', async () => {
    const { node, clock } = await createTestNode({ file: { cluster: { tombstoneTtlMs: 1_000 } } });
    const { store } = node;
    node.registry.register({ ...reg('a'), service: 'orders' });
    node.registry.register({ ...reg('a'), service: 'billing' });
    node.registry.register({ ...reg('a'), namespace: 'other', service: 'search' });
    const names = node.views.servicesOf('default');
    expect(names).toEqual(['billing', 'orders']);
    expect(node.views.servicesOf('other')).toEqual(['search']);
    // A write to a service that exists makes no service: the same list, not built again.
    const version = store.servicesVersion;
    node.registry.register({ ...reg('b'), service: 'orders' });
    node.registry.cancel({ namespace: 'default', service: 'orders', instanceId: 'b' });
    expect(store.servicesVersion).toBe(version);
    expect(node.views.servicesOf('default')).toBe(names);
    // A new service (any case of a name is one service), then one whose last record is purged.
    node.registry.register({ ...reg('a'), service: 'ledger' });
    node.registry.register({ ...reg('b'), service: 'LEDGER' });
    expect(store.servicesVersion).toBe(version + 1);
    expect(node.views.servicesOf('default')).toEqual(['billing', 'ledger', 'orders']);
    node.registry.cancel({ namespace: 'default', service: 'billing', instanceId: 'a' });
    clock.jump(1_001);
    node.reaper.runOnce();
    expect(store.servicesVersion).toBe(version + 2);
    expect(node.views.servicesOf('default')).toEqual(['ledger', 'orders']);
    expect(node.views.servicesOf('other')).toEqual(['search']);
    expect(node.views.servicesOf('none')).toEqual([]);
  });
});

describe('ServiceViews memory', () => {
  it('gives back the encodings of a view too old to be served again, without a read to trigger it', async () => {
    const { node, clock } = await createTestNode();
    node.registry.register(reg('a'));
    const view = node.views.get('default', 'orders');
    let builds = 0;
    const bytes = () => node.views.encoding(view, 'bytes', () => ((builds += 1), Buffer.alloc(1_000)));
    bytes();
    bytes();
    expect(builds).toBe(1);
    await clock.advance(2_000);
    // The sweep dropped the view: its encoding is no longer kept (a reader still holding the view is answered, uncached).
    bytes();
    bytes();
    expect(builds).toBe(3);
    expect(node.views.get('default', 'orders')).not.toBe(view);
  });
});

describe('ServiceViews sweep', () => {
  it('retires the expired views a slice a turn, oldest first, and stops at the first young one', async () => {
    const { node, clock } = await createTestNode();
    const stepped = new SteppedClock(clock);
    const views = new ServiceViews({ clock: stepped, store: node.store, leaseView: () => node.registry.leaseView() }, { maxAgeMs: 1_000, sweepSlice: 10 });
    const names = Array.from({ length: 30 }, (_, i) => `s-${i}`);
    for (const service of names) node.registry.register({ ...reg('a'), service });
    const built = names.slice(0, 25).map((service) => views.get('default', service));
    // 600 ms later: five more views are built, and s-0's again after a change (it goes last).
    clock.jump(600);
    node.registry.register({ ...reg('b'), service: 's-0' });
    const young = ['s-0', ...names.slice(25)].map((service) => views.get('default', service));
    let probes = 0;
    /** Whether a view is still the cached one: its encoding is kept only while it is. */
    const current = (view: ServiceView) => {
      let builds = 0;
      const name = `probe-${probes++}`;
      views.encoding(view, name, () => (builds += 1));
      views.encoding(view, name, () => (builds += 1));
      return builds === 1;
    };
    const currentOld = () => built.slice(1, 25).filter(current).length;
    expect(currentOld()).toBe(24);
    clock.jump(400);
    stepped.fireTick();
    expect(currentOld()).toBe(14);
    expect(stepped.pending).toBe(1);
    stepped.runSlice();
    expect(currentOld()).toBe(4);
    stepped.runSlice();
    expect(currentOld()).toBe(0);
    // The young ones stay, and the sweep stopped at the first of them.
    expect(young.every(current)).toBe(true);
    expect(stepped.pending).toBe(0);
    views.close();
  });

  it('keeps a view rebuilt for its age after the older ones, so the sweep still reaches them', async () => {
    const { node, clock } = await createTestNode();
    const stepped = new SteppedClock(clock);
    const views = new ServiceViews({ clock: stepped, store: node.store, leaseView: () => node.registry.leaseView() }, { maxAgeMs: 1_000 });
    for (const service of ['a', 'b']) node.registry.register({ ...reg('x'), service });
    views.get('default', 'a');
    clock.jump(100);
    const b = views.get('default', 'b');
    // a is past its age: a read rebuilds it (no change in the store), before any sweep.
    clock.jump(900);
    const a = views.get('default', 'a');
    clock.jump(150);
    stepped.fireTick();
    const kept = (view: ServiceView) => views.encoding(view, 'probe', () => ({})) === views.encoding(view, 'probe', () => ({}));
    expect(kept(a)).toBe(true);
    expect(kept(b)).toBe(false);
    views.close();
  });
});
