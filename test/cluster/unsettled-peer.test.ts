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

describe('peers that all restart at once, none of them ready', () => {
  const PER_PEER = 1_000;

  /**
   * Three peers with data dirs, each holding 1,000 instances of its own (registered while they
   * were cut apart), stopped, then started again at `offsetsMs` (virtual time) from their data:
   * no peer is ready, every one serves what it loaded.
   */
  async function restartAll(seed: number, offsetsMs: number[]) {
    const c = seeded(seed, { dataDirs: true });
    await c.start();
    c.network.partition(...c.ids.map((id) => [id]));
    for (const id of c.ids) {
      for (let i = 0; i < PER_PEER; i++) c.node(id).registry.register(instance(`${id}-${i}`, { service: `svc-${i % 10}`, leaseDurationMs: 600_000 }));
    }
    await c.advance(1_000);
    await c.stop();
    c.network.heal();
    const startMs = c.clock.nowMs();
    const launched: Array<{ node: RegistryNode; started: Promise<void> }> = [];
    for (const [i, id] of c.ids.entries()) c.clock.setTimeout(() => launched.push(c.launch(id)), offsetsMs[i]!);
    await c.clock.advanceUntil(() => launched.length === c.ids.length, 1_000, 1);
    await c.whileAdvancing(Promise.all(launched.map(({ started }) => started)), 60_000);
    return { c, launched, tookMs: c.clock.nowMs() - startMs };
  }

  it.each([
    [91, [0, 0, 0]],
    [92, [0, 10, 30]],
    [93, [0, 25, 50]],
    [94, [5, 0, 45]],
  ])('all become ready, none waiting on another for good, and converge on every instance (seed %i, started at %j ms)', async (seed, offsetsMs) => {
    const { c, launched, tookMs } = await restartAll(seed, offsetsMs);
    for (const { node } of launched) {
      expect(node.ready, node.config.self.id).toBe(true);
      // Each loaded its own 1,000 from its data dir and synced from another peer.
      expect(node.store.size).toBeGreaterThanOrEqual(2 * PER_PEER);
      expect(node.settled).toBe(true);
    }
    // No peer needed more than a few rounds (a deadlock would run into whileAdvancing's bound).
    expect(tookMs).toBeLessThan(20_000);
    await c.clock.advanceUntil(() => c.converged(), 30_000, 50);
    for (const { node } of launched) expect(node.store.size).toBe(3 * PER_PEER);
  });
});
