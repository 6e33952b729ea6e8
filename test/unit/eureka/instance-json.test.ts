import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatVersion } from '../../../src/clock/hlc.js';
import { withEureka, type EurekaAttributes } from '../../../src/eureka/attributes.js';
import { eurekaInstanceJson, METADATA_TEXTS_MAX } from '../../../src/eureka/instance-json.js';
import { toEurekaInstance, type ActionType } from '../../../src/eureka/instance-view.js';
import { instanceStatuses, type InstanceData, type StoredInstance } from '../../../src/registry/types.js';
import { DEFAULT_CLASS, eurekaAttributes } from './fixtures.js';

/** Strings that need JSON's escapes, non-ASCII and surrogate pairs among them. */
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 8 }), fc.constantFrom('', 'zone', '0', '12', '__proto__', 'a"b\\c', 'é\u2028\n'));
const status = fc.constantFrom(...instanceStatuses);
const wallMs = fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 });

const attributes: fc.Arbitrary<EurekaAttributes> = fc.record({
  hostName: text,
  ipAddr: text,
  vipAddress: fc.option(text),
  secureVipAddress: fc.option(text),
  homePageUrl: fc.option(text),
  statusPageUrl: fc.option(text),
  healthCheckUrl: fc.option(text),
  secureHealthCheckUrl: fc.option(text),
  dataCenterInfo: fc.record({
    className: fc.constantFrom(DEFAULT_CLASS, 'com.netflix.appinfo.AmazonInfo'),
    name: fc.constantFrom('MyOwn', 'Amazon'),
    metadata: fc.dictionary(text, text, { maxKeys: 3 }),
  }),
  countryId: fc.integer({ min: 0, max: 1_000_000 }),
  portEnabled: fc.boolean(),
  securePort: fc.integer({ min: 0, max: 65_535 }),
  overriddenStatus: fc.option(status),
  reportedStatus: status,
  renewalIntervalSecs: fc.integer({ min: 1, max: 86_400 }),
  lastDirtyTimestampMs: wallMs,
});


/** A stored instance of `service` with this data, its lease and version as given. */
function stored(
  data: InstanceData,
  at: { service?: string; instanceId?: string; registeredAtMs?: number; updatedAfterMs?: number; leaseDurationMs?: number; leaseExpiresAtMs?: number; deleted?: boolean } = {},
): StoredInstance {
  const registeredAtMs = at.registeredAtMs ?? 1_700_000_000_000;
  return {
    record: {
      namespace: 'default',
      service: at.service ?? 'orders',
      instanceId: at.instanceId ?? 'i-1',
      data,
      version: formatVersion({ wallMs: registeredAtMs + (at.updatedAfterMs ?? 0), counter: 3, peerId: 'peer-1' }),
      owner: 'peer-1',
      deleted: at.deleted ? 'cancel' : null,
      leaseDurationMs: at.leaseDurationMs ?? 90_000,
      registeredAtMs,
    },
    leaseExpiresAtMs: at.leaseExpiresAtMs ?? 0,
    heardUntilMs: 0,
    hidden: false,
    held: false,
    ownedSinceMs: 0,
    revision: 1,
    subBucket: 0,
  };
}

/** Core data with these fields over a plain instance's. */
function coreData(fields: Partial<InstanceData> = {}): InstanceData {
  return { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {}, ...fields };
}

const entry: fc.Arbitrary<StoredInstance> = fc
  .record({
    service: text.filter((name) => name !== ''),
    instanceId: text,
    host: text,
    port: fc.integer({ min: 0, max: 65_535 }),
    securePort: fc.option(fc.integer({ min: 0, max: 65_535 })),
    status,
    zone: text,
    metadata: fc.dictionary(text, text, { maxKeys: 6 }),
    eureka: fc.option(attributes),
    registeredAtMs: wallMs,
    updatedAfterMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_000_000 })),
    leaseDurationMs: fc.integer({ min: 0, max: 10_000_000 }),
    leaseExpiresAtMs: fc.oneof(fc.constant(0), wallMs),
    deleted: fc.boolean(),
  })
  .map((r) => {
    const core = coreData({ host: r.host, port: r.port, securePort: r.securePort, status: r.status, zone: r.zone, metadata: r.metadata });
    return stored(r.eureka ? withEureka(core, r.eureka) : core, r);
  });

describe('eurekaInstanceJson', () => {
  it('writes the bytes JSON.stringify writes for the instance object, whatever the record', () => {
    const action = fc.option(fc.constantFrom<ActionType>('ADDED', 'MODIFIED', 'DELETED'), { nil: undefined });
    fc.assert(
      fc.property(entry, action, fc.integer({ min: 1, max: 300 }), (stored, actionType, renewalIntervalSecs) => {
        const defaults = { renewalIntervalSecs };
        expect(eurekaInstanceJson(stored, defaults, actionType)).toBe(JSON.stringify(toEurekaInstance(stored, defaults, actionType)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('writes the cases a generator may miss: empty metadata, the zone added, the Amazon data centre', () => {
    const base = (data: Partial<InstanceData>, eureka?: Partial<EurekaAttributes>): StoredInstance =>
      stored(eureka ? withEureka(coreData(data), eurekaAttributes(eureka)) : coreData(data), { leaseExpiresAtMs: 1_700_000_090_000 });
    const cases = [
      base({}),
      base({ zone: 'eu-1' }),
      base({ zone: 'eu-1', metadata: { zone: 'own' } }),
      base({ metadata: { 2: 'b', 1: 'a', k: 'v' } }),
      base({ securePort: 8443 }, { homePageUrl: 'http://h/', dataCenterInfo: { className: 'com.netflix.appinfo.AmazonInfo', name: 'Amazon', metadata: { 'instance-id': 'i-9' } } }),
      base({}, { vipAddress: '', secureVipAddress: null, overriddenStatus: 'OUT_OF_SERVICE' }),
    ];
    for (const stored of cases) {
      const written = eurekaInstanceJson(stored, { renewalIntervalSecs: 30 });
      expect(written).toBe(JSON.stringify(toEurekaInstance(stored, { renewalIntervalSecs: 30 })));
      expect(() => JSON.parse(written)).not.toThrow();
    }
    expect(JSON.parse(eurekaInstanceJson(cases[0]!, { renewalIntervalSecs: 30 })).metadata).toEqual({ '@class': 'java.util.Collections$EmptyMap' });
  });

  it('writes a shared metadata map right with every zone, and stays right past the kept maps\' bound', () => {
    const shared = { team: 'a', tier: 'web' };
    const withZone = (zone: string, metadata: Record<string, string>): StoredInstance => stored(coreData({ zone, metadata }), { instanceId: `i-${zone}` });
    const defaults = { renewalIntervalSecs: 30 };
    const same = (stored: StoredInstance) => expect(eurekaInstanceJson(stored, defaults)).toBe(JSON.stringify(toEurekaInstance(stored, defaults)));
    for (const zone of ['', 'eu-1', 'us-2', '']) same(withZone(zone, shared));
    const empty = {};
    for (const zone of ['', 'eu-1']) same(withZone(zone, empty));
    for (let i = 0; i < METADATA_TEXTS_MAX + 10; i++) same(withZone(i % 3 === 0 ? '' : `z${i}`, { n: String(i) }));
    same(withZone('eu-1', shared));
    // Maps too long to keep, and enough of them to pass the kept characters' bound.
    for (let i = 0; i < 300; i++) same(withZone(i % 2 === 0 ? '' : 'eu-1', { big: 'v'.repeat(i % 3 === 0 ? 5_000 : 3_900), n: String(i) }));
    // A zone key present without a value keeps its place (never in a validated record).
    same(withZone('z1', { zone: undefined, a: 'x' } as unknown as Record<string, string>));
    same(withZone('', { zone: undefined } as unknown as Record<string, string>));
  });
});
