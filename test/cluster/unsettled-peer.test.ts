import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import type { RegistryNode } from '../../src/node.js';
import { instance, TestCluster } from '../support/cluster.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const INSTANCES = 5_000;
/** 20 ms each way; calls (and a stream's wait for its next bytes) time out after 2 s. */
const LATENCY_MS = 20;
const CALL_TIMEOUT_MS = 2_000;

function seeded(seed: number, options: Partial<ConstructorParameters<typeof TestCluster>[0]> = {}): TestCluster {
  onTestFailed(() => console.error(`cluster seed: ${seed}`));
  cluster = new TestCluster({ size: 3, seed, latencyMs: LATENCY_MS, cluster: { peerCallTimeoutMs: CALL_TIMEOUT_MS }, ...options });
  return cluster;
}

/** The virtual time at which `node` reports ready (checked as time moves in 5 ms steps). */
function readyAt(c: TestCluster, node: RegistryNode, started: Promise<void>): Promise<number> {
  return started.then(() => {
    expect(node.ready).toBe(true);
    return c.clock.nowMs();
  });
}

describe('a peer that joins through a peer still in its own start-up sync', () => {
  /**
   * peer-a holds 5,000 instances. peer-b restarts and streams them from peer-a; after the first
   * records frame (2,000 instances) peer-a's frames stop reaching it until `restoreAtMs`.
   * peer-c restarts meanwhile and can reach only peer-b: it is cut off from peer-a and knows
   * only peer-b (so that its first pull is from peer-b: a peer that has heard from nobody yet is
   * settled, the cold-start case, and peer-b may end its own sync from it then).
   */
  async function joinThroughSyncingPeer(seed: number, restoreAtMs: number) {
    const c = seeded(seed);
    await c.start();
    for (let i = 0; i < INSTANCES; i++) c.node('peer-a').registry.register(instance(`i-${i}`, { service: `svc-${i % 40}`, leaseDurationMs: 600_000 }));
    await c.clock.advanceUntil(() => c.converged(), 30_000, 50);
    c.crash('peer-b');
    c.crash('peer-c');
    c.network.partition(['peer-c'], ['peer-a']);
    const startMs = c.clock.nowMs();
    // peer-b's request reaches peer-a at +20 ms, its frames arrive 20 ms apart from +40 ms.
    c.clock.setTimeout(() => c.network.cutOneWay('peer-a', 'peer-b'), 70);
    c.clock.setTimeout(() => c.network.restoreOneWay('peer-a', 'peer-b'), restoreAtMs);
    const b = c.launch('peer-b');
    let observed: { bReady: boolean; bSettled: boolean; bSize: number; cReady: boolean; cSize: number } | undefined;
    let c0: { node: RegistryNode; started: Promise<void> } | undefined;
    const onlyB = { ...c.file, peers: c.file.peers.filter((peer) => peer.id !== 'peer-a') };
    c.clock.setTimeout(() => (c0 = c.launch('peer-c', onlyB)), 100);
    c.clock.setTimeout(() => {
      const nodeB = c.node('peer-b');
      const nodeC = c.node('peer-c');
      observed = { bReady: nodeB.ready, bSettled: nodeB.settled, bSize: nodeB.store.size, cReady: nodeC.ready, cSize: nodeC.store.size };
    }, restoreAtMs - 100);
    const bReadyAtMs = readyAt(c, b.node, b.started);
    await c.clock.advanceUntil(() => observed !== undefined, restoreAtMs, 5);
    await c.whileAdvancing(b.started);
    const cReadyAtMs = readyAt(c, c0!.node, c0!.started);
    await c.whileAdvancing(c0!.started);
    return { c, startMs, observed: observed!, bReadyAtMs: (await bReadyAtMs) - startMs, cReadyAtMs: (await cReadyAtMs) - startMs, nodeC: c0!.node };
  }

  it.each([81, 82, 83])('does not report ready with its partial registry: it waits until that peer is settled, then holds every instance (seed %i)', async (seed) => {
    const { observed, bReadyAtMs, cReadyAtMs, nodeC } = await joinThroughSyncingPeer(seed, 6_000);
    // Before the fix peer-c took peer-b's 2,000 instances as the whole registry and was ready at about +0.2 s.
    expect(observed.cReady).toBe(false);
    expect(observed.cSize).toBeGreaterThan(0);
    expect(observed.bReady).toBe(false);
    expect(observed.bSettled).toBe(false);
    expect(observed.bSize).toBeGreaterThan(0);
    expect(observed.bSize).toBeLessThan(INSTANCES);
    expect(bReadyAtMs).toBeGreaterThan(6_000);
    expect(cReadyAtMs).toBeGreaterThanOrEqual(bReadyAtMs);
    expect(nodeC.bootstrapResult).toEqual({ from: 'peer-b', records: INSTANCES });
    expect(nodeC.store.size).toBe(INSTANCES);
  });
});
