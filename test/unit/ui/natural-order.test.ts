import { describe, expect, it } from 'vitest';
import { RegistryModel, type Instance } from '../../../src/ui/model.js';
import { naturalCompare } from '../../../src/ui/natural-order.js';
import { plural } from '../../../src/ui/words.js';

const ips = Array.from({ length: 20 }, (_, i) => `10.7.0.${i + 1}`);

function instance(instanceId: string): Instance {
  return {
    namespace: 'default', service: 'orders', instanceId, host: instanceId, port: 80, securePort: null, status: 'UP', weight: 1, zone: '',
    metadata: {}, owner: 'peer-a', version: `v-${instanceId}`, leaseDurationMs: 30_000, leaseExpiresInMs: 30_000, leaseLive: true,
    evictionHeld: false, registeredAtMs: 0, lastUpdatedAtMs: 0,
  };
}

describe('natural order of instance ids and service names', () => {
  it('compares the numbers inside them as numbers', () => {
    expect([...ips].reverse().sort(naturalCompare)).toEqual(ips);
    expect(['svc-10', 'svc-9', 'svc-1'].sort(naturalCompare)).toEqual(['svc-1', 'svc-9', 'svc-10']);
    expect(['10.0.0.5:9000', '10.0.0.5:80', '10.0.0.5:8080'].sort(naturalCompare)).toEqual(['10.0.0.5:80', '10.0.0.5:8080', '10.0.0.5:9000']);
  });

  it('is a total order: names it holds equal still get one place', () => {
    expect(naturalCompare('01', '1')).not.toBe(0);
    expect(naturalCompare('01', '1')).toBe(-naturalCompare('1', '01'));
    expect(naturalCompare('a', 'a')).toBe(0);
    expect(['b', 'B', 'a', 'A'].sort(naturalCompare)).toEqual(['b', 'B', 'a', 'A'].sort(naturalCompare).reverse().sort(naturalCompare));
  });

  it('is the dashboard\'s order of instances and services', () => {
    const model = new RegistryModel('default');
    model.applySnapshot({ namespace: 'default', service: 'orders', revision: 1, instances: [...ips].reverse().map(instance) }, 0);
    model.applySnapshot({ namespace: 'default', service: 'svc-10', revision: 1, instances: [instance('x')] }, 0);
    model.applySnapshot({ namespace: 'default', service: 'svc-9', revision: 1, instances: [instance('y')] }, 0);
    expect(model.instancesOf('orders', '').map((entry) => entry.instance.instanceId)).toEqual(ips);
    expect(model.names()).toEqual(['orders', 'svc-9', 'svc-10']);
  });
});

describe('counts in words', () => {
  it.each([
    [0, '0 instances'],
    [1, '1 instance'],
    [2, '2 instances'],
  ])('%i', (count, text) => {
    expect(plural(count, 'instance')).toBe(text);
  });

  it('writes the count as asked', () => {
    expect(plural(1_000, 'service', (1_000).toLocaleString('en'))).toBe('1,000 services');
  });
});
