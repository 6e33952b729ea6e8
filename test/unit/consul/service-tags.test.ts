import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readsBudget } from '../../../src/http/loop-budget.js';
import { serviceTags } from '../../../src/consul/service-tags.js';
import type { TestNode } from '../../support/node.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';

let t: TestConsul | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await t?.close();
  t = undefined;
});

/** Two regions: zone eu-1 is in eu (this peer's), us-1 in us; an instance with no zone is in ours. */
const REGIONS = {
  id: 'peer-1',
  cluster: { name: 'c' },
  peers: [
    { id: 'peer-1', url: 'http://127.0.0.1:8761', region: 'eu', zone: 'eu-1' },
    { id: 'peer-2', url: 'http://127.0.0.1:8762', region: 'us', zone: 'us-1' },
  ],
};

const SERVICES = ['web', 'api', 'db'];
const ZONES = ['', 'eu-1', 'us-1'];
const TAGS = ['a', 'b', 'c', 'd'];

function register(node: TestNode['node'], service: string, instanceId: string, zone: string, tags: readonly string[]): void {
  node.registry.register({
    namespace: 'default',
    service,
    instanceId,
    data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone, metadata: { 'consul.tags': JSON.stringify(tags) } },
    leaseDurationMs: 30_000,
  });
}

/**
 * What /v1/catalog/services should answer, from the per-service catalog reads (which build each
 * instance's full Consul form, datacenter included): every service with an instance in the
 * datacenter asked (or in any), with the union of their tags, sorted.
 */
async function expectedCatalog(consul: TestConsul, dc: string | null): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const service of SERVICES) {
    const entries = (await consul.app.inject({ url: `/v1/catalog/service/${service}${dc ? `?dc=${dc}` : ''}` })).json() as { ServiceTags: string[] }[];
    if (entries.length > 0) out[service] = [...new Set(entries.flatMap((entry) => entry.ServiceTags))].sort();
  }
  return out;
}

describe('GET /v1/catalog/services from the kept service tags', () => {
  it('answers what the per-service catalog reads list, in every datacenter, after any writes (property, seeded)', async () => {
    const operation = fc.record({
      kind: fc.constantFrom('register', 'register', 'deregister', 'status'),
      service: fc.constantFrom(...SERVICES),
      instance: fc.integer({ min: 0, max: 4 }),
      zone: fc.constantFrom(...ZONES),
      tags: fc.subarray(TAGS),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 12 }), async (operations) => {
        const consul = (t = await createTestConsul({ file: REGIONS }));
        try {
          for (const op of operations) {
            const instanceId = `${op.service}-${op.instance}`;
            const key = { namespace: 'default', service: op.service, instanceId };
            const live = consul.node.registry.find(key) !== undefined;
            if (op.kind === 'register') register(consul.node, op.service, instanceId, op.zone, op.tags);
            else if (op.kind === 'deregister' && live) consul.node.registry.cancel(key);
            else if (op.kind === 'status' && live) consul.node.registry.update(key, { status: 'OUT_OF_SERVICE' });
            for (const dc of [null, 'eu', 'us']) {
              const answer = await consul.app.inject({ url: `/v1/catalog/services${dc ? `?dc=${dc}` : ''}` });
              expect(answer.json(), `dc ${dc}`).toEqual(await expectedCatalog(consul, dc));
            }
          }
        } finally {
          await consul.close();
          t = undefined;
        }
      }),
      { numRuns: 25, seed: 20261201 },
    );
  });

  it("keeps a service's tags until the service changes or a region of one of its zones does", async () => {
    t = await createTestConsul();
    const { node } = t;
    register(node, 'web', 'web-1', 'z1', ['a']);
    register(node, 'api', 'api-1', 'z1', ['b']);
    const regions = new Map<string, string>();
    const regionOfZone = (zone: string) => regions.get(zone);
    const tags = () => serviceTags(node.views, regionOfZone, 'here', 'default', 'web');
    const first = tags();
    expect(first).toMatchObject({ service: 'web', instances: 1, all: ['a'] });
    expect([...first.byDatacenter]).toEqual([['here', ['a']]]);
    expect(tags()).toBe(first);
    register(node, 'api', 'api-2', 'z1', ['c']);
    expect(tags()).toBe(first);
    regions.set('z9', 'us');
    expect(tags()).toBe(first);
    regions.set('z1', 'us');
    const moved = tags();
    expect(moved).not.toBe(first);
    expect([...moved.byDatacenter]).toEqual([['us', ['a']]]);
    register(node, 'web', 'web-2', 'z1', ['b', 'a']);
    expect(tags()).toMatchObject({ instances: 2, all: ['a', 'b'] });
  });

  it('yields between services, and answers the index read before it gathered (a write meanwhile wakes a blocking query)', async () => {
    t = await createTestConsul();
    const { node } = t;
    for (const service of SERVICES) register(node, service, `${service}-1`, '', ['a']);
    let looks = 0;
    vi.spyOn(readsBudget, 'spent').mockImplementation(() => {
      looks += 1;
      // While the answer is being gathered (it yields at every look): a write to a service.
      if (looks === 2) register(node, 'web', 'web-2', '', ['b']);
      return true;
    });
    const before = t.blocking.indexes.catalog('default');
    const answer = await t.app.inject({ url: '/v1/catalog/services' });
    expect(looks).toBe(SERVICES.length);
    expect(answer.headers['x-consul-index']).toBe(String(before));
    expect(t.blocking.indexes.catalog('default')).toBeGreaterThan(before);
    // A blocking query with that index answers at once, with the write in it.
    vi.restoreAllMocks();
    const next = await t.app.inject({ url: `/v1/catalog/services?index=${before}&wait=1m` });
    expect(next.headers['x-consul-index']).toBe(String(t.blocking.indexes.catalog('default')));
    expect(next.json().web).toEqual(['a', 'b']);
  });
});
