import { describe, expect, it } from 'vitest';
import { listService, orderByProximity } from '../../src/registry/queries.js';
import { instance, type TestCluster } from '../support/cluster.js';
import { ClientFleet, startCluster, useClusterCleanup, visibleIds } from './helpers.js';

useClusterCleanup();

const EU = ['peer-a', 'peer-b', 'peer-c'];
const US = ['peer-d', 'peer-e', 'peer-f'];

/** Two regions of three peers, 1 ms apart inside a region and 80 ms between regions. */
async function twoRegions(seed: number): Promise<TestCluster> {
  const c = await startCluster({ size: 6, seed, regions: ['eu', 'eu', 'eu', 'us', 'us', 'us'], cluster: { profile: 'wan' } });
  for (const from of EU) {
    for (const to of US) {
      c.network.setLatency(from, to, 80);
      c.network.setLatency(to, from, 80);
    }
  }
  return c;
}

function crossRegionBytes(c: TestCluster): number {
  let total = 0;
  for (const from of EU) for (const to of US) total += c.network.stats(from, to).bytes + c.network.stats(to, from).bytes;
  return total;
}

describe('two regions', () => {
  it('replicates eagerly inside a region and in batches across, within a second', async () => {
    const c = await twoRegions(61);
    c.node('peer-a').registry.register(instance('eu-1'));
    await c.advance(30);
    expect(visibleIds(c, 'peer-b')).toEqual(['eu-1']);
    expect(visibleIds(c, 'peer-d')).toEqual([]);
    await c.advance(500);
    for (const id of US) expect(visibleIds(c, id)).toEqual(['eu-1']);
  });

  it('keeps each region serving through a cut between them, evicts no heartbeating instance, and converges both ways after', async () => {
    const c = await twoRegions(62);
    const fleet = new ClientFleet(c);
    for (let i = 0; i < 60; i++) fleet.add(`i-${i}`, c.ids[i % 6]!);
    await fleet.run(120_000);
    const everyone = fleet.ids().sort();
    c.network.partition(EU, US);
    c.node('peer-b').registry.register(instance('eu-during', { leaseDurationMs: 600_000 }));
    c.node('peer-e').registry.register(instance('us-during', { leaseDurationMs: 600_000 }));
    await fleet.run(300_000, () => {
      for (const id of c.ids) expect(visibleIds(c, id).filter((x) => x.startsWith('i-'))).toEqual(everyone);
    });
    expect(c.node('peer-a').safety.status(c.clock.nowMs()).partitionGuard).toMatchObject({ active: true });
    expect(visibleIds(c, 'peer-a')).toContain('eu-during');
    expect(visibleIds(c, 'peer-a')).not.toContain('us-during');
    c.network.heal();
    await fleet.run(60_000);
    expect(c.converged()).toBe(true);
    for (const id of c.ids) {
      expect(visibleIds(c, id)).toContain('eu-during');
      expect(visibleIds(c, id)).toContain('us-during');
      expect(visibleIds(c, id).filter((x) => x.startsWith('i-'))).toEqual(everyone);
    }
  });

  it('costs under 600 bytes of cross-region bodies per write, and under 1 KB/s when idle', async () => {
    const c = await twoRegions(63);
    await c.advance(60_000);
    const idleStart = crossRegionBytes(c);
    await c.advance(60_000);
    const idlePerSecond = (crossRegionBytes(c) - idleStart) / 60;
    const before = crossRegionBytes(c);
    const writes = 300;
    for (let i = 0; i < writes; i++) {
      c.node(EU[i % 3]!).registry.register(instance(`w-${i}`, { data: { ...instance('x').data, port: 1000 + i, metadata: { version: '1.4.2', team: 'orders' } } }));
      await c.advance(10);
    }
    await c.advance(5_000);
    const perWrite = (crossRegionBytes(c) - before - idlePerSecond * 8) / writes;
    expect(visibleIds(c, 'peer-f')).toHaveLength(writes);
    // Bodies only (as sent: batched, gzip across regions); HTTP headers come on top over TCP.
    expect(perWrite).toBeLessThan(600);
    expect(idlePerSecond).toBeLessThan(1_000);
  });
});

describe('reads that stay near', () => {
  const zoneRegion: Record<string, string> = { 'eu-1a': 'eu', 'eu-1b': 'eu', 'us-1a': 'us' };
  it.each([
    ['eu-1a', ['a1', 'a2', 'b1', 'u1', 'x1']],
    ['eu-1b', ['b1', 'a1', 'a2', 'u1', 'x1']],
    ['us-1a', ['u1', 'a1', 'a2', 'b1', 'x1']],
    ['mars', ['a1', 'a2', 'b1', 'u1', 'x1']],
  ])('near %s', (near, expected) => {
    const instances = [
      { instanceId: 'u1', zone: 'us-1a' },
      { instanceId: 'x1', zone: 'unknown' },
      { instanceId: 'b1', zone: 'eu-1b' },
      { instanceId: 'a2', zone: 'eu-1a' },
      { instanceId: 'a1', zone: 'eu-1a' },
    ];
    expect(orderByProximity(instances, near, (zone) => zoneRegion[zone]).map((i) => i.instanceId)).toEqual(expected);
  });

  it('orders a listing by the zones and regions of the peers', async () => {
    const c = await twoRegions(64);
    const zones = ['z0', 'z3', 'z4', 'z1'];
    for (const [i, zone] of zones.entries()) {
      c.node('peer-a').registry.register(instance(`i-${i}`, { data: { ...instance('x').data, zone } }));
    }
    await c.advance(1_000);
    const node = c.node('peer-d');
    const listing = listService(node.store, 'default', 'orders', node.registry.leaseView(), false);
    expect(orderByProximity(listing.instances, 'z4', node.regionOfZone).map((i) => i.zone)).toEqual(['z4', 'z3', 'z0', 'z1']);
  });
});
