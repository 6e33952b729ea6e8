import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatVersion } from '../../../src/clock/hlc.js';
import { InstanceJsonCache, listingName, selectListing } from '../../../src/native/instance-json.js';
import { InstanceStore } from '../../../src/registry/store.js';
import type { InstanceData, InstanceStatus, StoredInstance } from '../../../src/registry/types.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import { toInstanceView } from '../../../src/registry/view.js';
import type { LeaseView } from '../../../src/registry/visibility.js';
import { createTestNode } from '../../support/node.js';

const SELF = 'peer-1';
/** Strings a client may send, and some meant to trip the split: quotes, escapes, the keys themselves. */
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.constantFrom('', '"', '\\', '\u0000', '\ud800', ',"region":', ',"owner":"x"', ',"leaseExpiresInMs":1,"leaseLive":true', ',"registeredAtMs":'),
);
const peerId = fc.constantFrom(SELF, 'peer-2', 'eu-1.b:x_y');

const entryArb = fc.record({
  namespace: text,
  service: text,
  instanceId: text,
  host: text,
  port: fc.integer({ min: 1, max: 65_535 }),
  securePort: fc.option(fc.integer({ min: 1, max: 65_535 }), { nil: null }),
  status: fc.constantFrom<InstanceStatus>('UP', 'DOWN', 'STARTING', 'OUT_OF_SERVICE'),
  weight: fc.integer({ min: 0, max: 100 }),
  zone: fc.constantFrom('', 'eu-a', 'us-a', 'nowhere', '"'),
  metadata: fc.dictionary(text, text, { maxKeys: 5 }),
  group: fc.option(text, { nil: undefined }),
  owner: peerId,
  writer: peerId,
  wallMs: fc.integer({ min: 0, max: 2 ** 40 }),
  leaseDurationMs: fc.integer({ min: 1_000, max: 600_000 }),
  registeredAtMs: fc.integer({ min: 0, max: 2 ** 40 }),
  leaseExpiresAtMs: fc.integer({ min: 0, max: 2_000_000 }),
  hidden: fc.boolean(),
  held: fc.boolean(),
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the generated fields, split back into a record
function toEntry(fields: Record<string, any>): StoredInstance {
  const { namespace, service, instanceId, owner, writer, wallMs, leaseDurationMs, registeredAtMs, group, ...rest } = fields;
  const { leaseExpiresAtMs, hidden, held, ...data } = rest;
  return {
    record: {
      namespace,
      service,
      instanceId,
      data: { ...data, ...(group === undefined ? {} : { group }) } as InstanceData,
      version: formatVersion({ wallMs, counter: 7, peerId: writer }),
      owner,
      deleted: null,
      leaseDurationMs,
      registeredAtMs,
    },
    leaseExpiresAtMs,
    heardUntilMs: leaseExpiresAtMs,
    hidden,
    held,
    ownedSinceMs: 0,
    revision: 1,
    subBucket: 0,
  };
}

/** Zone to region maps: membership changes them, so the region must never come from the cache. */
const REGION_MAPS: Record<string, string>[] = [{ 'eu-a': 'eu', 'us-a': 'us', '"': 'q"uote' }, { 'eu-a': 'west', nowhere: 'found' }, {}];

function leaseView(
  nowMs: number,
  upPeers: string[],
  guards: { suspendOwnedExpiry: boolean; holdDownOwners: boolean },
  regions: Record<string, string> = REGION_MAPS[0]!,
): LeaseView {
  return { nowMs, selfId: SELF, liveness: { isUp: (id) => upPeers.includes(id) }, guards, regionOfZone: (zone) => regions[zone] };
}

const viewArb = fc.record({
  regions: fc.constantFrom(...REGION_MAPS),
  nowMs: fc.integer({ min: 0, max: 2_000_000 }),
  up: fc.subarray(['peer-2', 'eu-1.b:x_y']),
  suspendOwnedExpiry: fc.boolean(),
  holdDownOwners: fc.boolean(),
});

describe('instance JSON from cached parts', () => {
  it('writes the same bytes as JSON.stringify of the view, first read and later reads, whatever the data and the lease', () => {
    fc.assert(
      fc.property(entryArb, viewArb, viewArb, (fields, first, later) => {
        const entry = toEntry(fields);
        const cache = new InstanceJsonCache(new InstanceStore(16), 1_000_000);
        for (const v of [first, later, first]) {
          const view = leaseView(v.nowMs, v.up, v, v.regions);
          expect(cache.instanceJson(entry, view)).toBe(JSON.stringify(toInstanceView(entry, view)));
        }
      }),
      { numRuns: 400 },
    );
  });

  it('follows the lease as it moves (same record, parts cached) and a new record as soon as one is stored', async () => {
    const { node, clock } = await createTestNode();
    const body = { service: 'svc', host: '10.0.0.1', port: 80, leaseDurationMs: 5_000, metadata: { a: '1' } };
    node.registry.register(parseRegistration(body, 'default', node.config.limits, node.config.cluster));
    const key = { namespace: 'default', service: 'svc', instanceId: '10.0.0.1:80' };
    const cache = new InstanceJsonCache(node.store, 1_000_000);
    const read = () => JSON.parse(cache.instanceJson(node.store.get(key)!, node.registry.leaseView()));
    expect(read()).toMatchObject({ leaseExpiresInMs: 5_000, leaseLive: true, status: 'UP' });
    await clock.advance(2_000);
    expect(read()).toMatchObject({ leaseExpiresInMs: 3_000, leaseLive: true });
    node.registry.update(key, { status: 'DOWN' });
    expect(read()).toMatchObject({ status: 'DOWN' });
    expect(read()).toEqual(toInstanceView(node.store.get(key)!, node.registry.leaseView()));
  });

  it('writes a list as JSON.stringify writes the array of views', () => {
    fc.assert(
      fc.property(fc.array(entryArb, { maxLength: 6 }), viewArb, (list, v) => {
        const entries = list.map(toEntry);
        const view = leaseView(v.nowMs, v.up, v, v.regions);
        const cache = new InstanceJsonCache(new InstanceStore(16), 1_000_000);
        cache.instancesJson(entries, view); // caches the parts
        expect(cache.instancesJson(entries, view)).toBe(JSON.stringify(entries.map((entry) => toInstanceView(entry, view))));
      }),
      { numRuns: 100 },
    );
  });

  it('keeps its bytes within the budget, gives them back as records are replaced, and answers the same past it', async () => {
    const { node } = await createTestNode();
    const cache = new InstanceJsonCache(node.store, 2_000);
    const register = (port: number, version: string) =>
      node.registry.register(
        parseRegistration({ service: 'svc', host: '10.0.0.1', port, metadata: { version } }, 'default', node.config.limits, node.config.cluster),
      ).entry;
    const entries = Array.from({ length: 10 }, (_, i) => register(100 + i, '1'));
    const view = node.registry.leaseView();
    expect(cache.instancesJson(entries, view)).toBe(JSON.stringify(entries.map((entry) => toInstanceView(entry, view))));
    const full = cache.cachedBytes;
    expect(full).toBeGreaterThan(0);
    expect(full).toBeLessThanOrEqual(2_000);
    // Past the budget the rest is written whole, and the same again.
    expect(cache.instancesJson(entries, view)).toBe(JSON.stringify(entries.map((entry) => toInstanceView(entry, view))));
    expect(cache.cachedBytes).toBe(full);
    // A new version of a cached record gives its bytes back.
    register(100, '2');
    expect(cache.cachedBytes).toBeLessThan(full);
    cache.close();
  });

  it("caches what a listing writes, not a register's or heartbeat's answer, which uses what a listing cached", async () => {
    const { node } = await createTestNode();
    const cache = new InstanceJsonCache(node.store, 1_000_000);
    const register = (port: number) =>
      node.registry.register(parseRegistration({ service: 'svc', host: '10.0.0.1', port }, 'default', node.config.limits, node.config.cluster)).entry;
    const entries = [register(100), register(101)];
    const view = node.registry.leaseView();
    const renewed = (entry: StoredInstance) => JSON.stringify({ ...toInstanceView(entry, view), heartbeatIntervalMs: 30_000 });
    for (const entry of entries) expect(cache.renewedJson(entry, view, 30_000)).toBe(renewed(entry));
    expect(cache.cachedBytes).toBe(0);
    cache.instancesJson(entries.slice(0, 1), view);
    const listed = cache.cachedBytes;
    expect(listed).toBeGreaterThan(0);
    for (const entry of entries) expect(cache.renewedJson(entry, view, 30_000)).toBe(renewed(entry));
    expect(cache.cachedBytes).toBe(listed);
    cache.close();
  });
});

describe('listingBytes: shared from the second read of a view', () => {
  it('builds the first read alone, then keeps one buffer for every later reader of the same view', async () => {
    const { createTestNode } = await import('../../support/node.js');
    const { InstanceJsonCache, listingBytes } = await import('../../../src/native/instance-json.js');
    const { node } = await createTestNode();
    node.registry.register({
      namespace: 'default',
      service: 'orders',
      instanceId: 'a',
      data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
      leaseDurationMs: 30_000,
    });
    const parts = new InstanceJsonCache(node.store, 1_000_000);
    const view = node.views.get('default', 'orders');
    const selection = { allStatuses: false, protectThresholdRatio: 0, group: null };
    const leases = () => node.registry.leaseView();
    const bytes = (built: Buffer | Promise<Buffer>): Buffer => {
      if (!Buffer.isBuffer(built)) throw new Error('a listing of one instance is written at once');
      return built;
    };
    const first = bytes(listingBytes(node.views, view, selection, parts, leases));
    const second = bytes(listingBytes(node.views, view, selection, parts, leases));
    const third = bytes(listingBytes(node.views, view, selection, parts, leases));
    expect(second).not.toBe(first);
    expect(third).toBe(second);
    expect(first.equals(second)).toBe(true);
    expect(JSON.parse(second.toString()).instances.map((i: { instanceId: string }) => i.instanceId)).toEqual(['a']);
    parts.close();
  });
});

describe('listingBytes: a large service in slices', () => {
  it('builds a listing past LISTING_IN_TURNS_MIN_INSTANCES in slices, the same bytes as at once, one build for the readers meanwhile, kept from the second read', async () => {
    const { createTestNode } = await import('../../support/node.js');
    const { InstanceJsonCache, listingBytes, LISTING_IN_TURNS_MIN_INSTANCES } = await import('../../../src/native/instance-json.js');
    const { node } = await createTestNode({ file: { limits: { instancesPerServiceMax: 100_000 } } });
    const count = LISTING_IN_TURNS_MIN_INSTANCES + 1_000;
    for (let i = 0; i < count; i++) {
      node.registry.register({
        namespace: 'default',
        service: 'big',
        instanceId: `i-${i}`,
        data: { host: '10.0.0.1', port: 1 + i, securePort: null, status: i % 3 === 0 ? 'DOWN' : 'UP', weight: 1, zone: 'z', metadata: { k: String(i) } },
        leaseDurationMs: 30_000,
      });
    }
    const parts = new InstanceJsonCache(node.store, 1_000_000);
    const view = node.views.get('default', 'big');
    const selection = { allStatuses: false, protectThresholdRatio: 0, group: null };
    const leases = () => node.registry.leaseView();
    const first = listingBytes(node.views, view, selection, parts, leases);
    const meanwhile = listingBytes(node.views, view, selection, parts, leases);
    expect(Buffer.isBuffer(first)).toBe(false);
    expect(meanwhile).toBe(first);
    const bytes = await first;
    // What one JSON.stringify of the listing writes.
    const { entries, ...listing } = selectListing(view, selection, leases);
    const asOf = { ...leases(), nowMs: view.builtAtMs };
    expect(bytes.toString()).toBe(JSON.stringify({ ...listing, instances: entries.map((entry) => toInstanceView(entry, asOf)) }));
    expect(entries.length).toBeGreaterThan(LISTING_IN_TURNS_MIN_INSTANCES / 2);
    // A second reader came during the build: kept for the next ones.
    expect(listingBytes(node.views, view, selection, parts, leases)).toBe(bytes);
    parts.close();
    await node.stop();
  });
});

describe('listingName', () => {
  it('names each status filter, threshold and group apart, and the same selection alike', () => {
    const names = [
      { allStatuses: false, protectThresholdRatio: 0.85, group: null },
      { allStatuses: true, protectThresholdRatio: 0.85, group: null },
      { allStatuses: false, protectThresholdRatio: 0, group: null },
      { allStatuses: false, protectThresholdRatio: 0.85, group: 'blue' },
      { allStatuses: true, protectThresholdRatio: 0.85, group: 'blue' },
    ].map(listingName);
    expect(new Set(names).size).toBe(names.length);
    expect(listingName({ allStatuses: false, protectThresholdRatio: 0.85, group: null })).toBe(names[0]);
    expect(listingName({ allStatuses: true, protectThresholdRatio: 0, group: null })).toBe('v1-listing|all|0|');
    expect(listingName({ allStatuses: false, protectThresholdRatio: 0.85, group: 'blue' })).toBe('v1-listing|up|0.85|blue');
  });
});
