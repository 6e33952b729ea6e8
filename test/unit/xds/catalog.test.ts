import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RegistryNode } from '../../../src/node.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import { XdsCatalog } from '../../../src/xds/catalog.js';
import { XdsProtos } from '../../../src/xds/protos.js';
import { createTestNode } from '../../support/node.js';

/** The catalog of each service's encoded resources (src/xds/catalog.ts), read through the peer's views. */

let protos: XdsProtos;
beforeAll(() => {
  protos = new XdsProtos();
});
afterEach(() => {
  vi.restoreAllMocks();
});

function register(node: RegistryNode, service: string, port: number) {
  node.registry.register(parseRegistration({ service, host: '10.0.0.1', port, leaseDurationMs: 60_000 }, 'default', node.config.limits, node.config.cluster));
}

async function setUp() {
  const { node } = await createTestNode();
  const catalog = new XdsCatalog({ views: node.views, protos }, { namespaces: ['default'] });
  return { node, catalog };
}

/** Every spelling of `name` in upper and lower case, up to `count`. */
function caseVariants(name: string, count: number): string[] {
  const out: string[] = [];
  for (let mask = 0; mask < count; mask += 1) out.push([...name].map((c, i) => ((mask >> i) & 1 ? c.toUpperCase() : c)).join(''));
  return out;
}

describe('XdsCatalog', () => {
  it('encodes a service once per change whatever the case its name is spelled in, its resources named as the store spells it', async () => {
    const { node, catalog } = await setUp();
    register(node, 'greeter', 1);
    const spellings = caseVariants('greeter', 128);
    const pack = vi.spyOn(protos, 'pack');
    const clusters = spellings.map((name) => catalog.get(name, 'cluster', 'ring_hash'));
    // One Listener (with its connection manager and router), Cluster and assignment: 5, not 5 per spelling.
    expect(pack).toHaveBeenCalledTimes(5);
    expect(catalog.keptCount).toBe(1);
    expect(new Set(clusters.map((cluster) => cluster!.any)).size).toBe(1);
    expect(protos.unpack(clusters[0]!.any).name).toBe('greeter');
    pack.mockClear();
    register(node, 'greeter', 2);
    for (const name of spellings) catalog.get(name, 'endpoints', 'ring_hash');
    expect(pack).toHaveBeenCalledTimes(5);
    expect(catalog.keptCount).toBe(1);
  });

  it('drops a service when found gone by any spelling, a purged one when told, and every service of a policy no stream uses', async () => {
    const { node, catalog } = await setUp();
    register(node, 'greeter', 1);
    register(node, 'other', 1);
    catalog.get('greeter', 'cluster', 'ring_hash');
    catalog.get('greeter', 'cluster', 'round_robin');
    catalog.get('other', 'cluster', 'ring_hash');
    expect(catalog.keptCount).toBe(3);
    node.registry.cancel({ namespace: 'default', service: 'greeter', instanceId: '10.0.0.1:1' });
    expect(catalog.get('GREETER', 'cluster', 'ring_hash')).toBeNull();
    // Its round_robin resources went too: they served what is no longer served.
    expect(catalog.keptCount).toBe(1);
    catalog.forgetService('default', 'OTHER');
    expect(catalog.keptCount).toBe(0);
    catalog.get('other', 'cluster', 'ring_hash');
    catalog.get('other', 'cluster', 'round_robin');
    catalog.forgetPolicy('ring_hash');
    expect(catalog.keptCount).toBe(1);
  });
});
