import { describe, expect, it } from 'vitest';
import { expectRegistryError } from '../../support/errors.js';
import { eurekaOf, parseEurekaAttributes, sameEurekaAttributes, toCoreData, toCorePatch } from '../../../src/eureka/attributes.js';
import { createTestNode } from '../../support/node.js';
import { eurekaAttributes, eurekaData } from './fixtures.js';

describe('parseEurekaAttributes', () => {
  it('accepts well-formed attributes and returns a copy that survives a JSON round trip', () => {
    const attributes = eurekaAttributes({ dataCenterInfo: { className: 'x', name: 'Amazon', metadata: { 'instance-id': 'i-1' } } });
    const parsed = parseEurekaAttributes(JSON.parse(JSON.stringify(attributes)));
    expect(parsed).toEqual(attributes);
    expect(parsed).not.toBe(attributes);
  });

  it.each([
    [{ hostName: 7 }, 'eureka.hostName'],
    [{ hostName: 'h'.repeat(256) }, 'eureka.hostName'],
    [{ ipAddr: 'a\nb' }, 'eureka.ipAddr'],
    [{ vipAddress: 'v'.repeat(1_025) }, 'eureka.vipAddress'],
    [{ homePageUrl: 'u'.repeat(2_049) }, 'eureka.homePageUrl'],
    [{ countryId: 1.5 }, 'eureka.countryId'],
    [{ portEnabled: 'true' }, 'eureka.portEnabled'],
    [{ securePort: 0 }, 'eureka.securePort'],
    [{ overriddenStatus: 'UNKNOWN' }, 'eureka.overriddenStatus'],
    [{ reportedStatus: 'up' }, 'eureka.reportedStatus'],
    [{ renewalIntervalSecs: 0 }, 'eureka.renewalIntervalSecs'],
    [{ lastDirtyTimestampMs: -1 }, 'eureka.lastDirtyTimestampMs'],
    [{ dataCenterInfo: null }, 'eureka.dataCenterInfo'],
    [{ dataCenterInfo: { className: 'x', name: 'y', metadata: { k: 1 } } }, 'eureka.dataCenterInfo.metadata.k'],
    [
      { dataCenterInfo: { className: 'x', name: 'y', metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) } },
      'eureka.dataCenterInfo.metadata',
    ],
    [{ dataCenterInfo: { className: 'x', name: 'y', metadata: {}, extra: 1 } }, 'eureka.dataCenterInfo.extra'],
    [{ surprise: true }, 'eureka.surprise'],
  ])('refuses %j naming %s', (patch, field) => {
    const error = expectRegistryError(() => parseEurekaAttributes({ ...eurekaAttributes(), ...patch }));
    expect(error.message.startsWith(`${field}:`)).toBe(true);
  });

  it('refuses a missing field', () => {
    const { countryId: _, ...partial } = eurekaAttributes();
    expect(() => parseEurekaAttributes(partial)).toThrow(/^eureka\.countryId:/);
  });
});

describe('sameEurekaAttributes', () => {
  it('compares field by field, whatever the key order', () => {
    const a = eurekaAttributes({ dataCenterInfo: { className: 'c', name: 'n', metadata: { x: '1', y: '2' } } });
    const reordered = JSON.parse(JSON.stringify({ ...a, dataCenterInfo: { metadata: { y: '2', x: '1' }, name: 'n', className: 'c' } }));
    expect(sameEurekaAttributes(a, reordered)).toBe(true);
    expect(sameEurekaAttributes(a, { ...a, vipAddress: 'other' })).toBe(false);
    expect(sameEurekaAttributes(a, { ...a, dataCenterInfo: { ...a.dataCenterInfo, metadata: { x: '1' } } })).toBe(false);
    expect(sameEurekaAttributes(undefined, undefined)).toBe(true);
    expect(sameEurekaAttributes(a, undefined)).toBe(false);
  });
});

describe('Registry with Eureka attributes', () => {
  const key = { namespace: 'default', service: 'ORDERS', instanceId: 'i-1' };

  it('writes a new version when only the Eureka attributes change, and none when nothing does', async () => {
    const { node } = await createTestNode({ start: false });
    const first = node.registry.register({ ...key, data: toCoreData(eurekaData()), leaseDurationMs: 90_000 }).entry.record.version;
    const same = node.registry.register({ ...key, data: toCoreData(eurekaData()), leaseDurationMs: 90_000 });
    expect(same.entry.record.version).toBe(first);
    const changed = node.registry.register({ ...key, data: toCoreData(eurekaData({ eureka: { vipAddress: 'other' } })), leaseDurationMs: 90_000 });
    expect(changed.entry.record.version > first).toBe(true);
    const patch = toCorePatch(changed.entry.record.data, { status: 'UP', eureka: eurekaAttributes({ vipAddress: 'other', overriddenStatus: 'DOWN' }) });
    const updated = node.registry.update(key, patch);
    expect(updated.record.version > changed.entry.record.version).toBe(true);
    expect(eurekaOf(updated.record.data)?.overriddenStatus).toBe('DOWN');
  });
});

describe('the eureka protocol extension', () => {
  it('travels opaquely in the core: the Eureka view reads it back checked, and a malformed one is absent', () => {
    const data = toCoreData(eurekaData({ eureka: { renewalIntervalSecs: 5 } }));
    expect(data).not.toHaveProperty('eureka');
    expect(data.renewalIntervalMs).toBe(5_000);
    expect(eurekaOf(data)).toEqual(eurekaAttributes({ renewalIntervalSecs: 5 }));
    const received = JSON.parse(JSON.stringify(data));
    expect(eurekaOf(received)).toEqual(eurekaAttributes({ renewalIntervalSecs: 5 }));
    expect(eurekaOf({ ...received, extensions: { eureka: { hostName: 42 } } })).toBeUndefined();
  });
});
