import { describe, expect, it } from 'vitest';
import { leaseLeft, matches, RegistryModel, type Instance } from '../../../src/ui/model.js';
import { SseParser } from '../../../src/ui/sse-parser.js';

function instance(instanceId: string, over: Partial<Instance> = {}): Instance {
  return {
    namespace: 'default',
    service: 'orders',
    instanceId,
    host: '10.0.0.5',
    port: 8080,
    securePort: null,
    status: 'UP',
    weight: 1,
    zone: 'a',
    metadata: {},
    owner: 'peer-a',
    version: `v-${instanceId}`,
    leaseDurationMs: 30_000,
    leaseExpiresInMs: 30_000,
    leaseLive: true,
    evictionHeld: false,
    registeredAtMs: 0,
    lastUpdatedAtMs: 0,
    ...over,
  };
}

const snapshot = (service: string, instances: Instance[], revision = 1) => ({ namespace: 'default', service, revision, instances });
const delta = (service: string, revision: number, change: { added?: Instance[]; changed?: Instance[]; removed?: string[] }) => ({
  namespace: 'default',
  service,
  revision,
  added: change.added ?? [],
  changed: change.changed ?? [],
  removed: (change.removed ?? []).map((instanceId) => ({ instanceId })),
});

describe('RegistryModel', () => {
  it('builds services with counts by status from snapshots, and keeps them in step with deltas', () => {
    const model = new RegistryModel('default');
    model.applySnapshot(snapshot('orders', [instance('a'), instance('b', { status: 'DOWN' })]), 0);
    model.applySnapshot(snapshot('billing', [instance('x', { service: 'billing' })]), 0);
    model.applySnapshot(snapshot('empty', []), 0);
    expect(model.names()).toEqual(['billing', 'orders']);
    expect(model.services.get('orders')!.counts).toEqual({ UP: 1, DOWN: 1, STARTING: 0, OUT_OF_SERVICE: 0 });
    expect(model.total).toBe(3);

    model.applyDelta(delta('orders', 2, { added: [instance('c')], changed: [instance('b', { status: 'UP', version: 'v2' })], removed: ['a'] }), 0);
    expect(model.services.get('orders')!.counts).toEqual({ UP: 2, DOWN: 0, STARTING: 0, OUT_OF_SERVICE: 0 });
    expect(model.instancesOf('orders', '').map((e) => e.instance.instanceId)).toEqual(['b', 'c']);
    model.applyDelta(delta('billing', 2, { removed: ['x'] }), 0);
    expect(model.names()).toEqual(['orders']);
    model.applyDelta(delta('fresh', 3, { added: [instance('f', { service: 'fresh' })] }), 0);
    expect(model.names()).toEqual(['fresh', 'orders']);
    expect(model.total).toBe(3);
  });

  it('ignores a delta older than what it knows, and a removal of an unknown instance', () => {
    const model = new RegistryModel('default');
    model.applySnapshot(snapshot('orders', [instance('a')], 5), 0);
    model.applyDelta(delta('orders', 4, { removed: ['a'] }), 0);
    model.applyDelta(delta('orders', 6, { removed: ['nobody'] }), 0);
    expect(model.instancesOf('orders', '').map((e) => e.instance.instanceId)).toEqual(['a']);
    expect(model.total).toBe(1);
  });

  it('counts held instances, and a snapshot replaces everything', () => {
    const model = new RegistryModel('default');
    model.applySnapshot(snapshot('orders', [instance('a', { evictionHeld: true }), instance('b')]), 0);
    expect(model.services.get('orders')!.held).toBe(1);
    model.applySnapshot(snapshot('orders', [instance('c')], 9), 0);
    expect(model.services.get('orders')!.held).toBe(0);
    expect(model.total).toBe(1);
  });

  it('searches service names, instance ids, addresses, statuses, zones, owners and metadata', () => {
    const model = new RegistryModel('default');
    model.applySnapshot(snapshot('orders', [instance('a', { metadata: { version: '1.4.2' } }), instance('b', { host: '10.9.9.9', zone: 'eu-1' })]), 0);
    model.applySnapshot(snapshot('billing', [instance('x', { service: 'billing', status: 'OUT_OF_SERVICE' })]), 0);
    expect(model.servicesMatching('bill').map((s) => s.name)).toEqual(['billing']);
    expect(model.servicesMatching('version=1.4').map((s) => s.name)).toEqual(['orders']);
    expect(model.instancesOf('orders', 'version=1.4').map((e) => e.instance.instanceId)).toEqual(['a']);
    expect(model.instancesOf('orders', '10.9.9').map((e) => e.instance.instanceId)).toEqual(['b']);
    expect(model.instancesOf('orders', 'EU-1').map((e) => e.instance.instanceId)).toEqual(['b']);
    expect(model.servicesMatching('out_of_service').map((s) => s.name)).toEqual(['billing']);
    // A matching service name shows all its instances.
    expect(model.instancesOf('orders', 'ord')).toHaveLength(2);
    expect(matches(instance('z', { owner: 'peer-b' }), 'peer-b')).toBe(true);
  });

  it('counts leases down from when they were read, and takes fresher figures for the same version', () => {
    const model = new RegistryModel('default');
    model.applySnapshot(snapshot('orders', [instance('a', { leaseExpiresInMs: 10_000 }), instance('h', { evictionHeld: true }), instance('e', { leaseLive: false })]), 1_000);
    const [a, e, h] = model.instancesOf('orders', '');
    expect(leaseLeft(a!, 4_000)).toBe(7_000);
    expect(leaseLeft(a!, 20_000)).toBe('expired');
    expect(leaseLeft(h!, 4_000)).toBe('held');
    expect(leaseLeft(e!, 4_000)).toBe('expired');
    model.refreshLeases('orders', [instance('a', { leaseExpiresInMs: 30_000 }), instance('e', { version: 'other', leaseLive: true })], 20_000);
    expect(leaseLeft(a!, 21_000)).toBe(29_000);
    expect(leaseLeft(e!, 21_000)).toBe('expired');
  });

  it('applies a 10,000-instance snapshot and a burst of deltas quickly enough for a page', () => {
    const model = new RegistryModel('default');
    const many = Array.from({ length: 10_000 }, (_, i) => instance(`i-${String(i).padStart(5, '0')}`, { service: `svc-${i % 50}` }));
    for (let s = 0; s < 50; s++) model.applySnapshot(snapshot(`svc-${s}`, many.filter((_, i) => i % 50 === s)), 0);
    expect(model.total).toBe(10_000);
    for (let r = 2; r < 200; r++) model.applyDelta(delta('svc-1', r, { changed: [instance('i-00001', { service: 'svc-1', status: r % 2 ? 'DOWN' : 'UP', version: `v${r}` })] }), 0);
    expect(model.services.get('svc-1')!.counts.UP + model.services.get('svc-1')!.counts.DOWN).toBe(200);
    expect(model.servicesMatching('i-09999').map((s) => s.name)).toEqual(['svc-49']);
  });
});

describe('SseParser', () => {
  it('reassembles events split anywhere across chunks, skipping comments', () => {
    const parser = new SseParser();
    const text = 'retry: 1000\n: watching * in default\n\nevent: snapshot\nid: 3\ndata: {"a":1}\n\n: keep-alive\n\nevent: delta\r\ndata: {"b":\r\ndata: 2}\r\n\r\n';
    const events = [];
    for (let i = 0; i < text.length; i += 7) events.push(...parser.push(text.slice(i, i + 7)));
    expect(events).toEqual([
      { event: 'snapshot', id: '3', data: '{"a":1}' },
      { event: 'delta', id: undefined, data: '{"b":\n2}' },
    ]);
  });
});
