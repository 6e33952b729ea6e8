import { afterEach, describe, expect, it } from 'vitest';
import { serviceEncoding, type ConsulReads } from '../../../src/consul/encodings.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';

let t: TestConsul;
afterEach(async () => t?.close());

const nativeRegister = (body: Record<string, unknown>) => t.native.inject({ method: 'POST', url: '/v1/instances', payload: { host: '10.0.0.9', port: 9000, ...body } });
const ids = (url: string) => t.app.inject({ url }).then((response) => (response.json() as { Service: { ID: string } }[]).map((entry) => entry.Service.ID));

function reads(regionOfZone: (zone: string) => string | undefined = t.node.regionOfZone): ConsulReads {
  return { views: t.node.views, leaseView: () => ({ ...t.node.registry.leaseView(), regionOfZone }), regionOfZone };
}

describe('Consul encodings', () => {
  it('are kept across the native views\' 1 s rebuilds until the service changes, and sent as shared bytes', async () => {
    t = await createTestConsul();
    await nativeRegister({ service: 'web', instanceId: 'a' });
    const first = await t.app.inject({ url: '/v1/health/service/web' });
    const kept = serviceEncoding(reads(), 'default', 'web', t.node.config.self.region);
    expect(first.rawPayload.equals(kept.healthJson)).toBe(true);
    await t.clock.advance(5_000);
    expect((await t.app.inject({ url: '/v1/health/service/web' })).body).toBe(first.body);
    expect(serviceEncoding(reads(), 'default', 'web', t.node.config.self.region)).toBe(kept);
    await nativeRegister({ service: 'web', instanceId: 'b' });
    expect(await ids('/v1/health/service/web')).toEqual(['a', 'b']);
    expect(serviceEncoding(reads(), 'default', 'web', t.node.config.self.region)).not.toBe(kept);
  });

  it('drop an instance whose lease ended, with no store change in between', async () => {
    // The reaper would make it a store change: let it run only long after.
    t = await createTestConsul({ file: { cluster: { evictionIntervalMs: 60_000 } } });
    await nativeRegister({ service: 'web', instanceId: 'long' });
    await nativeRegister({ service: 'web', instanceId: 'short', leaseDurationMs: 2_000 });
    expect(await ids('/v1/health/service/web')).toEqual(['long', 'short']);
    const revision = t.node.store.revision;
    await t.clock.advance(2_100);
    // The reaper has not evicted it yet: the read itself sees that the lease ended.
    expect(t.node.store.revision).toBe(revision);
    expect(await ids('/v1/health/service/web')).toEqual(['long']);
  });

  it('are rebuilt when the region of one of their zones changes (membership learned it later)', async () => {
    t = await createTestConsul();
    await nativeRegister({ service: 'web', instanceId: 'a', zone: 'far-1' });
    const regions = new Map<string, string>();
    const source = reads((zone) => regions.get(zone));
    const first = serviceEncoding(source, 'default', 'web', 'home');
    expect(first.instances[0]!.instance.datacenter).toBe('home');
    regions.set('other-1', 'us');
    expect(serviceEncoding(source, 'default', 'web', 'home')).toBe(first);
    regions.set('far-1', 'eu');
    const rebuilt = serviceEncoding(source, 'default', 'web', 'home');
    expect(rebuilt).not.toBe(first);
    expect(rebuilt.instances[0]!.instance.datacenter).toBe('eu');
    expect(JSON.parse(rebuilt.healthJson.toString())[0].Node.Datacenter).toBe('eu');
  });
});
