import { describe, expect, it } from 'vitest';
import { listService } from '../../src/registry/queries.js';
import { ClientFleet, startCluster, useClusterCleanup } from './helpers.js';
import { instance, type TestCluster } from '../support/cluster.js';

useClusterCleanup();

/** Every instance id a peer serves, over all services. */
function served(cluster: TestCluster, peerId: string, services: string[]): string[] {
  const node = cluster.node(peerId);
  return services
    .flatMap((service) => listService(node.store, 'default', service, node.registry.leaseView(), true).instances)
    .map((instance) => instance.instanceId)
    .sort();
}

const SERVICES = Array.from({ length: 10 }, (_, i) => `svc-${i}`);

/** 10 services x 10 instances, spread over the peers; every client heartbeats its own peer. */
function populate(cluster: TestCluster, fleet: ClientFleet, failover = false): void {
  for (const [s, service] of SERVICES.entries()) {
    for (let i = 0; i < 10; i++) fleet.add(`${service}-${i}`, cluster.ids[(s * 10 + i) % cluster.ids.length]!, service, { failover });
  }
}

describe('eviction safety in a cluster', () => {
  it('evicts nothing while a peer is cut off from all its clients, and evicts normally once it heals', async () => {
    const c = await startCluster({ size: 3, seed: 41 });
    const fleet = new ClientFleet(c);
    populate(c, fleet);
    await fleet.run(120_000);
    const everyone = fleet.ids().sort();
    expect(served(c, 'peer-a', SERVICES)).toEqual(everyone);

    fleet.cutOff('peer-a', true);
    await fleet.run(300_000, () => {
      for (const id of c.ids) expect(served(c, id, SERVICES)).toEqual(everyone);
    });
    expect(c.node('peer-a').safety.status(c.clock.nowMs()).selfPreservation.active).toBe(true);
    expect(c.node('peer-a').reaper.lastRun?.held.selfPreservation).toBeGreaterThan(0);

    fleet.cutOff('peer-a', false);
    await fleet.run(90_000);
    expect(c.node('peer-a').safety.status(c.clock.nowMs()).selfPreservation.active).toBe(false);
    // Now a real death on peer-a is evicted everywhere again.
    const victim = fleet.ids((id) => c.node('peer-a').registry.find({ namespace: 'default', service: id.replace(/-\d+$/, ''), instanceId: id })?.record.owner === 'peer-a')[0]!;
    fleet.kill(victim);
    await fleet.run(40_000);
    for (const id of c.ids) expect(served(c, id, SERVICES)).not.toContain(victim);
  });

  it('does not engage for 2,000 registrations on one peer that never heartbeat; a real renewal drop afterwards still does', async () => {
    const c = await startCluster({ size: 3, seed: 43, cluster: { serviceEvictionMaxRatio: 1 } });
    const fleet = new ClientFleet(c);
    populate(c, fleet);
    await fleet.run(120_000);
    // Test registrations on peer-a (a script, the README's register example): nobody heartbeats them.
    const quiet = Array.from({ length: 2_000 }, (_, i) => instance(`quiet-${i}`, { service: `scratch-${i % 10}` }));
    for (const registration of quiet) c.node('peer-a').registry.register(registration);
    let held = 0;
    await fleet.run(90_000, () => {
      for (const id of c.ids) expect(c.node(id).safety.status(c.clock.nowMs()).selfPreservation.active).toBe(false);
      held += c.node('peer-a').reaper.lastRun?.held.selfPreservation ?? 0;
    });
    expect(held).toBe(0);
    // Their leases ran out and the owner evicted them everywhere; the heartbeating fleet is untouched.
    for (const id of c.ids) {
      expect(quiet.filter((registration) => c.node(id).registry.find(registration) !== undefined)).toEqual([]);
      expect(served(c, id, SERVICES)).toEqual(fleet.ids().sort());
    }
    // Now peer-a's heartbeating clients fall silent at once: that is a partition's signature.
    fleet.cutOff('peer-a', true);
    await fleet.run(60_000);
    const status = c.node('peer-a').safety.status(c.clock.nowMs()).selfPreservation;
    expect(status.active).toBe(true);
    expect(status.ownedInstances).toBeGreaterThanOrEqual(30);
    expect(status.ownedInstances).toBeLessThan(100);
  });

  it('evicts a mass crash of 40% of one service within the per-service cap, and the rest once the window allows', async () => {
    const c = await startCluster({ size: 3, seed: 42 });
    const fleet = new ClientFleet(c);
    for (const service of SERVICES) for (let i = 0; i < 10; i++) fleet.add(`${service}-${i}`, 'peer-a', service);
    await fleet.run(120_000);
    const dead = ['svc-0-0', 'svc-0-1', 'svc-0-2', 'svc-0-3'];
    for (const id of dead) fleet.kill(id);
    await fleet.run(40_000);
    const left = served(c, 'peer-a', ['svc-0']);
    // 30% of 10 = 3 evicted, the fourth held (still served, flagged) and logged.
    expect(left.filter((id) => dead.includes(id))).toHaveLength(1);
    const node = c.node('peer-a');
    const heldView = listService(node.store, 'default', 'svc-0', node.registry.leaseView(), true).instances.find((i) => dead.includes(i.instanceId));
    expect(heldView).toMatchObject({ evictionHeld: true, leaseLive: false });
    expect(node.safety.status(c.clock.nowMs()).serviceCap.servicesAtCap).toEqual(['default/svc-0']);
    expect(node.safety.status(c.clock.nowMs()).selfPreservation.active).toBe(false);
    await fleet.run(70_000);
    for (const id of c.ids) expect(served(c, id, ['svc-0']).filter((x) => dead.includes(x))).toEqual([]);
    for (const id of c.ids) expect(served(c, id, ['svc-0'])).toHaveLength(6);
  });

  it('gives a held instance one grace period when the partition guard lifts by itself, rather than hiding it at once', async () => {
    // The shape of chaos seed 8675349 (5 peers): the peers cut off with this one come back one
    // by one; the guard lifts when the first is back, while the owner of some held instances is
    // not seen back yet, though their client heartbeats it all along.
    const c = await startCluster({ size: 5, seed: 44, cluster: { partitionGuardRatio: 0.3, ownerDownGraceMs: 0 } });
    const fleet = new ClientFleet(c);
    // 20% of the registry on peer-d, 20% on peer-e, the rest on the others.
    for (let i = 0; i < 10; i++) fleet.add(`svc-0-${i}`, ['peer-d', 'peer-d', 'peer-e', 'peer-e', 'peer-a', 'peer-a', 'peer-b', 'peer-b', 'peer-c', 'peer-c'][i]!, 'svc-0');
    await fleet.run(60_000);
    const everyone = fleet.ids().sort();
    const onD = ['svc-0-0', 'svc-0-1'];
    c.network.partition(['peer-d', 'peer-e'], ['peer-a', 'peer-b', 'peer-c']);
    // Past suspicion and the grace (their 30 s lease): 40% of the registry is down, so it is held.
    await fleet.run(60_000, () => expect(served(c, 'peer-a', ['svc-0'])).toEqual(everyone));
    expect(c.node('peer-a').safety.status(c.clock.nowMs()).partitionGuard.active).toBe(true);
    // peer-e comes back first; peer-d is still cut off: 20% down, under the ratio, so the guard lifts.
    c.network.heal();
    c.network.partition(['peer-d'], ['peer-a', 'peer-b', 'peer-c', 'peer-e']);
    await fleet.run(20_000, () => expect(served(c, 'peer-a', ['svc-0'])).toEqual(everyone));
    expect(c.node('peer-a').safety.status(c.clock.nowMs()).partitionGuard.active).toBe(false);
    // peer-d back within the new grace: nothing was ever hidden.
    c.network.heal();
    await fleet.run(20_000, () => expect(served(c, 'peer-a', ['svc-0'])).toEqual(everyone));
    // Had peer-d stayed away, its instances would have gone one grace after the guard lifted.
    c.network.partition(['peer-d'], ['peer-a', 'peer-b', 'peer-c', 'peer-e']);
    await fleet.run(80_000);
    expect(served(c, 'peer-a', ['svc-0'])).toEqual(everyone.filter((id) => !onD.includes(id)));
  });

  it('evicts no heartbeating instance anywhere during a 5-minute partition of one peer, and a crashed one within lease + 2 s otherwise', async () => {
    const c = await startCluster({ size: 3, seed: 43 });
    const fleet = new ClientFleet(c);
    populate(c, fleet);
    await fleet.run(120_000);
    const everyone = fleet.ids().sort();

    c.network.partition(['peer-a'], ['peer-b', 'peer-c']);
    await fleet.run(300_000, () => {
      for (const id of c.ids) expect(served(c, id, SERVICES)).toEqual(everyone);
    });
    expect(c.node('peer-b').safety.status(c.clock.nowMs()).partitionGuard.active).toBe(true);
    expect(c.node('peer-a').safety.status(c.clock.nowMs()).partitionGuard.active).toBe(true);
    c.network.heal();
    await fleet.run(60_000);
    for (const id of c.ids) expect(served(c, id, SERVICES)).toEqual(everyone);
    expect(c.node('peer-b').safety.status(c.clock.nowMs()).partitionGuard.active).toBe(false);
    expect(c.converged()).toBe(true);

    // Nothing else wrong: a crashed instance disappears from every peer within lease + 2 s.
    const victim = 'svc-3-3';
    fleet.kill(victim);
    const lastBeatMs = fleet.lastBeatAtMs(victim);
    const goneAt = new Map<string, number>();
    while (goneAt.size < 3 && c.clock.nowMs() - lastBeatMs < 60_000) {
      await fleet.run(100);
      for (const id of c.ids) if (!goneAt.has(id) && !served(c, id, ['svc-3']).includes(victim)) goneAt.set(id, c.clock.nowMs());
    }
    expect(goneAt.size).toBe(3);
    for (const atMs of goneAt.values()) {
      expect(atMs - lastBeatMs).toBeGreaterThanOrEqual(30_000);
      expect(atMs - lastBeatMs).toBeLessThanOrEqual(32_000);
    }
  });

  it('loses nothing through a rolling restart of every peer', async () => {
    const c = await startCluster({ size: 3, seed: 44 });
    const fleet = new ClientFleet(c);
    populate(c, fleet, true);
    await fleet.run(120_000);
    const everyone = fleet.ids().sort();
    for (const peer of c.ids) {
      c.crash(peer);
      await fleet.run(20_000);
      await c.restart(peer);
      await fleet.run(60_000);
    }
    await fleet.run(60_000);
    for (const id of c.ids) expect(served(c, id, SERVICES)).toEqual(everyone);
    expect(c.converged()).toBe(true);
  });
});
