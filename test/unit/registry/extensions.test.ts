import { describe, expect, it } from 'vitest';
import { checkRecord } from '../../../src/persistence/record-codec.js';
import {
  checkExtensions,
  extensionLimits,
  legacyRenewalIntervalMs,
  liftExtensions,
  lowerExtensions,
  sameExtensions,
} from '../../../src/registry/extensions.js';
import { NO_GUARDS } from '../../../src/registry/visibility.js';
import { parseWireRecord, toWireRecord } from '../../../src/replication/wire.js';
import { expectRegistryError } from '../../support/errors.js';
import { record, stored } from '../../support/records.js';

const leases = { nowMs: 0, selfId: 'a', liveness: { isUp: () => true }, guards: NO_GUARDS };
const withExtension = record({
  data: {
    host: '10.0.0.1',
    port: 8080,
    securePort: null,
    status: 'UP',
    weight: 1,
    zone: '',
    metadata: {},
    renewalIntervalMs: 5_000,
    extensions: { eureka: { hostName: 'h', vipAddress: 'orders' } },
  },
});

describe('protocol extensions', () => {
  it('go on the wire as fields of data (the previous form) and come back as the same record', () => {
    const wire = JSON.parse(JSON.stringify(toWireRecord(stored(withExtension), leases)));
    expect(wire.data.eureka).toEqual({ hostName: 'h', vipAddress: 'orders' });
    expect(wire.data).not.toHaveProperty('extensions');
    const { leaseRemainingMs: _remaining, ...back } = parseWireRecord(wire);
    expect(back).toEqual(withExtension);
  });

  it('read a record from a peer of the previous version: its extension and the renewal interval it declared', () => {
    const wire = JSON.parse(JSON.stringify(toWireRecord(stored(record()), leases)));
    wire.data.eureka = { hostName: 'h', renewalIntervalSecs: 30 };
    const parsed = parseWireRecord(wire);
    expect(parsed.data.extensions).toEqual({ eureka: { hostName: 'h', renewalIntervalSecs: 30 } });
    expect(parsed.data.renewalIntervalMs).toBe(30_000);
    expect(parsed.data).not.toHaveProperty('eureka');
  });

  it('lift a record written to disk before extensions existed', () => {
    const legacy = JSON.parse(JSON.stringify(record()));
    legacy.data.eureka = { hostName: 'h', renewalIntervalSecs: 30 };
    const checked = checkRecord(legacy);
    expect(typeof checked).toBe('object');
    expect(checked).toMatchObject({ data: { extensions: { eureka: { hostName: 'h' } }, renewalIntervalMs: 30_000 } });
    expect((checked as { data: object }).data).not.toHaveProperty('eureka');
    expect(checkRecord(JSON.parse(JSON.stringify(withExtension)))).toEqual(withExtension);
  });

  it('are bounded in count and size, named plainly, and objects', () => {
    const many = Object.fromEntries(Array.from({ length: extensionLimits.maxCount + 1 }, (_, i) => [`p${i}`, {}]));
    expect(expectRegistryError(() => checkExtensions('data', many)).message).toMatch(/at most 8 protocol extensions/);
    expect(expectRegistryError(() => checkExtensions('data', { big: { text: 'x'.repeat(extensionLimits.maxJsonBytes) } })).message).toMatch(/at most 16384 bytes/);
    expect(expectRegistryError(() => checkExtensions('data', { Bad_Name: {} })).message).toMatch(/data\.Bad_Name/);
    expect(expectRegistryError(() => liftExtensions('data', { extensions: { eureka: 'text' } })).message).toMatch(/data\.eureka: must be an object/);
  });

  it('compare by value, whatever the key order; the legacy interval needs a positive whole number of seconds', () => {
    expect(sameExtensions({ a: { x: 1, y: [1, { z: 2 }] } }, { a: { y: [1, { z: 2 }], x: 1 } })).toBe(true);
    expect(sameExtensions({ a: { x: 1 } }, { a: { x: 2 } })).toBe(false);
    expect(sameExtensions(undefined, { a: {} })).toBe(false);
    expect(legacyRenewalIntervalMs({ a: { renewalIntervalSecs: 0 } })).toBeUndefined();
    expect(legacyRenewalIntervalMs({ a: { renewalIntervalSecs: 2.5 } })).toBeUndefined();
    expect(lowerExtensions(record().data)).toEqual(record().data);
  });
});
