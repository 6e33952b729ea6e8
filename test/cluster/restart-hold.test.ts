import { describe, expect, it } from 'vitest';
import type { TestCluster } from '../support/cluster.js';
import { instance } from '../support/cluster.js';
import { startCluster, useClusterCleanup, visibleIds } from './helpers.js';

useClusterCleanup();

const INSTANCES = ['c-0', 'c-1', 'c-2', 'c-3', 'c-4'];
const key = (instanceId: string) => ({ namespace: 'default', service: 'orders', instanceId });

/** Every client heartbeats `peer` once (registering again on a 404, as real clients do). */
function beat(c: TestCluster, peer: string): void {
  for (const id of INSTANCES) {
    try {
      c.node(peer).registry.heartbeat(key(id));
    } catch {
      c.node(peer).registry.register(instance(id, { leaseDurationMs: 6_000 }));
    }
  }
}

/**
 * Lets virtual time run for `durationMs`, the clients heartbeating `peer` every second, and
 * checks every 10 ms that every running peer serves every instance.
 */
async function heartbeatAndWatch(c: TestCluster, peer: string, durationMs: number, phase: string): Promise<void> {
  const startMs = c.clock.nowMs();
  let nextBeatMs = startMs;
  while (c.clock.nowMs() - startMs < durationMs) {
    if (c.clock.nowMs() >= nextBeatMs) {
      beat(c, peer);
      nextBeatMs += 1_000;
    }
    await c.advance(10);
    for (const id of c.nodes.keys()) {
      expect(visibleIds(c, id), `${id}, ${phase}, +${c.clock.nowMs() - startMs} ms`).toEqual(INSTANCES);
    }
  }
}

/**
 * The shape of chaos seed 8675309, 5 peers (issue 22): peer-c dies, its clients fail over to
 * peer-e at once, peer-c restarts (taking its instances back from the start-up snapshot, with a
 * fresh lease, unheard) and peer-e is cut off from the other four before its takeover reaches
 * peer-c. The local profile's timings, the chaos run's 6 s lease.
 */
async function restartedOwnerCutOffFromItsClients(seed: number, settings: Record<string, unknown> = {}): Promise<TestCluster> {
  const c = await startCluster({ size: 5, seed, cluster: { profile: 'local', ...settings } });
  for (const id of INSTANCES) c.node('peer-c').registry.register(instance(id, { leaseDurationMs: 6_000 }));
  await heartbeatAndWatch(c, 'peer-c', 5_000, 'before the kill');
  c.crash('peer-c');
  beat(c, 'peer-e');
  await c.advance(1_000);
  beat(c, 'peer-e');
  await c.advance(500);
  await c.restart('peer-c');
  c.network.partition(['peer-e'], ['peer-a', 'peer-b', 'peer-c', 'peer-d']);
  return c;
}

describe('a restarted owner cut off from the peer its clients heartbeat', () => {
  it('serves the instances it took back all along, through its lease running out and the reaper holding them', async () => {
    const c = await restartedOwnerCutOffFromItsClients(22);
    const restoredUntilMs = Math.max(...INSTANCES.map((id) => c.node('peer-c').registry.find(key(id))!.leaseExpiresAtMs));
    // Past the lease peer-c gave them at its restart: the hold must cover the very first read.
    await heartbeatAndWatch(c, 'peer-e', restoredUntilMs - c.clock.nowMs() + 2_000, 'partition');
    for (const id of INSTANCES) {
      expect(c.node('peer-c').registry.find(key(id))).toMatchObject({ held: true, heardUntilMs: 0, record: { owner: 'peer-c' } });
    }
    c.network.heal();
    await heartbeatAndWatch(c, 'peer-e', 15_000, 'after the heal');
    for (const peer of c.ids) {
      for (const id of INSTANCES) expect(c.node(peer).registry.find(key(id))?.record.owner, `${peer} ${id}`).toBe('peer-e');
    }
  });

  // Seeds whose probe schedule has peer-c see every peer up before any takeover reached it
  // (with the hold ending as soon as every peer answers, each of them evicts one).
  it.each([101, 104, 110])('keeps holding them after the heal until the takeover, slow to arrive, is here (seed %i)', async (seed) => {
    const c = await restartedOwnerCutOffFromItsClients(seed);
    await heartbeatAndWatch(c, 'peer-e', 8_000, 'partition');
    // Contact comes back, except that what peer-e sends peer-c is lost for 2 s more: peer-c
    // sees every peer up (peer-e through indirect probes) well before peer-e's takeover
    // reaches it, directly or through another peer.
    c.network.heal();
    c.network.cutOneWay('peer-e', 'peer-c');
    await heartbeatAndWatch(c, 'peer-e', 2_000, 'healed but peer-e -> peer-c');
    expect(c.node('peer-c').membership.allUpSinceMs()).not.toBeNull();
    c.network.heal();
    await heartbeatAndWatch(c, 'peer-e', 15_000, 'after the heal');
    for (const peer of c.ids) {
      for (const id of INSTANCES) expect(c.node(peer).registry.find(key(id))?.record.owner, `${peer} ${id}`).toBe('peer-e');
    }
  });

  it('still evicts, one lease after every peer answers again, an instance it took back that nobody hears', async () => {
    // No eviction cap: all five go in one run (the per-service cap would take one per window).
    const c = await restartedOwnerCutOffFromItsClients(24, { serviceEvictionMaxRatio: 1, evictionMaxPerRunRatio: 1 });
    // The clients die with peer-e cut off: nobody heartbeats them any more.
    await c.advance(10_000);
    for (const peer of ['peer-a', 'peer-b', 'peer-c', 'peer-d']) expect(visibleIds(c, peer), peer).toEqual(INSTANCES);
    c.network.heal();
    const healedAtMs = c.clock.nowMs();
    await c.clock.advanceUntil(() => c.ids.every((peer) => visibleIds(c, peer).length === 0), 60_000, 50);
    // peer-c's hold ends one lease (6 s) after every peer answers again, then its reaper
    // evicts them (replicated) at its next run.
    const allUpSinceMs = c.node('peer-c').membership.allUpSinceMs()!;
    expect(allUpSinceMs).toBeGreaterThanOrEqual(healedAtMs);
    expect(c.clock.nowMs() - allUpSinceMs).toBeGreaterThanOrEqual(6_000);
    expect(c.clock.nowMs() - allUpSinceMs).toBeLessThanOrEqual(6_000 + 500);
    for (const peer of c.ids) for (const id of INSTANCES) expect(c.node(peer).registry.find(key(id)), `${peer} ${id}`).toBeUndefined();
  });
});
