import { afterEach, describe, expect, it, onTestFailed, vi } from 'vitest';
import { buildServer } from '../../src/http/server.js';
import type { RegistryNode } from '../../src/node.js';
import type { PeerApi } from '../../src/transport/transport.js';
import { instance, TestCluster } from '../support/cluster.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const INSTANCES = 5_000;
/** 20 ms each way; calls time out after 2 s (the local profile). */
const LATENCY_MS = 20;
const CALL_TIMEOUT_MS = 2_000;

/** A two-peer cluster whose peer-a holds `INSTANCES` instances and peer-b has them too. */
async function loaded(seed: number): Promise<TestCluster> {
  const c = new TestCluster({ size: 2, seed, latencyMs: LATENCY_MS, cluster: { peerCallTimeoutMs: CALL_TIMEOUT_MS } });
  await c.start();
  for (let i = 0; i < INSTANCES; i++) c.node('peer-a').registry.register(instance(`i-${i}`, { service: `svc-${i % 40}`, leaseDurationMs: 600_000 }));
  await c.clock.advanceUntil(() => c.converged(), 30_000, 50);
  return c;
}

/** The stream's lines with the start frame's `settled` field taken out (as a peer of an older version sends it). */
async function* withoutSettled(lines: AsyncGenerator<string>): AsyncGenerator<string> {
  for await (const line of lines) {
    const frame = JSON.parse(line) as { t: string; settled?: boolean };
    if (frame.t !== 'start') yield line;
    else {
      expect(frame.settled).toBe(true);
      delete frame.settled;
      yield `${JSON.stringify(frame)}\n`;
    }
  }
}

/** Counts the peer calls `api` receives by method, and its snapshot streams. */
function spy(api: PeerApi) {
  const handle = vi.spyOn(api, 'handle');
  const stream = vi.spyOn(api as Required<PeerApi>, 'openSnapshotStream');
  return {
    pages: () => handle.mock.calls.filter(([method]) => method === 'snapshot').length,
    streams: () => stream.mock.calls.length,
  };
}

describe('a peer that joins through the snapshot stream', () => {
  it('holds every instance after one stream, without asking for a single page', async () => {
    const seed = 71;
    cluster = await loaded(seed);
    cluster.crash('peer-b');
    const calls = spy(cluster.node('peer-a').peerApi);
    const restarted = await cluster.restart('peer-b');
    expect(restarted.ready).toBe(true);
    expect(restarted.bootstrapResult, `seed ${seed}`).toEqual({ from: 'peer-a', records: INSTANCES });
    expect(restarted.store.size).toBe(INSTANCES);
    expect(cluster.converged(), `seed ${seed}`).toBe(true);
    expect(calls.streams()).toBe(1);
    expect(calls.pages()).toBe(0);
    expect(cluster.node('peer-a').peerApi.snapshotStreams.active).toBe(0);
  });

  it("takes a whole stream from a peer of an older version (a start frame without settled) as the sync, as before", async () => {
    const seed = 76;
    cluster = await loaded(seed);
    cluster.crash('peer-b');
    // peer-a as a peer of the previous version: it streams, its start frame says nothing of settled.
    const nodeA = cluster.node('peer-a');
    const older: Required<PeerApi> = {
      handle: (method, body) => nodeA.peerApi.handle(method, body),
      openSnapshotStream: (body) => withoutSettled(nodeA.peerApi.openSnapshotStream(body)),
    };
    const stream = vi.spyOn(older, 'openSnapshotStream');
    cluster.network.attach('peer-a', older);
    const restarted = await cluster.restart('peer-b');
    expect(stream).toHaveBeenCalledTimes(1);
    expect(restarted.ready).toBe(true);
    expect(restarted.bootstrapResult, `seed ${seed}`).toEqual({ from: 'peer-a', records: INSTANCES });
    expect(restarted.store.size).toBe(INSTANCES);
  });

  it('reads pages from a peer of an older version (stream answered 404)', async () => {
    const seed = 72;
    cluster = await loaded(seed);
    cluster.crash('peer-b');
    // peer-a as a peer of the previous version: its API serves no stream.
    const nodeA = cluster.node('peer-a');
    const older: PeerApi = { handle: (method, body) => nodeA.peerApi.handle(method, body) };
    const handle = vi.spyOn(older, 'handle');
    cluster.network.attach('peer-a', older);
    const restarted = await cluster.restart('peer-b');
    expect(restarted.bootstrapResult, `seed ${seed}`).toEqual({ from: 'peer-a', records: INSTANCES });
    expect(restarted.store.size).toBe(INSTANCES);
    expect(handle.mock.calls.filter(([method]) => method === 'snapshot').length).toBeGreaterThan(0);
  });
});

describe('a peer whose start-up sync fails midway', () => {
  it('stays not ready (client routes 503) holding part of the registry, and is ready once a whole sync succeeds', async () => {
    const seed = 73;
    cluster = await loaded(seed);
    cluster.crash('peer-b');
    const c = cluster;
    const startMs = c.clock.nowMs();
    const handle = vi.spyOn(c.node('peer-a').peerApi, 'handle');
    const digestsFromB = () => handle.mock.calls.filter(([method, body]) => method === 'digest' && (body as { from?: string }).from === 'peer-b').length;
    // The stream's request reaches peer-a at +20 ms, its frames arrive 20 ms apart from +40 ms:
    // cut peer-a -> peer-b after the first records frame, heal 6 s later.
    c.clock.setTimeout(() => c.network.cutOneWay('peer-a', 'peer-b'), 70);
    c.clock.setTimeout(() => c.network.heal(), 6_000);
    let during: { ready: boolean; size: number; status: Promise<number>; result: unknown } | undefined;
    c.clock.setTimeout(() => {
      const node: RegistryNode = c.node('peer-b');
      during = {
        ready: node.ready,
        size: node.store.size,
        result: node.bootstrapResult,
        status: buildServer({ node }).then(async (app) => {
          const response = await app.inject({ url: '/v1/services/svc-1?status=all' });
          await app.close();
          return response.statusCode;
        }),
      };
    }, 5_000);
    const restarted = await c.restart('peer-b');
    expect(during, `seed ${seed}`).toBeDefined();
    // Before the fix it started alone, ready, at the first timeout (about +2.1 s).
    expect(during!.ready, `seed ${seed}`).toBe(false);
    expect(during!.result).toBeUndefined();
    expect(during!.size).toBeGreaterThan(0);
    expect(await during!.status).toBe(503);
    expect(restarted.ready).toBe(true);
    expect(restarted.bootstrapResult?.from).toBe('peer-a');
    expect(c.clock.nowMs() - startMs).toBeGreaterThan(6_000);
    expect(restarted.store.size).toBe(INSTANCES);
    // peer-a came back for peer-b after the heal, but a peer still catching up runs no extra
    // anti-entropy round against its partial registry: only the one that ends its sync.
    expect(digestsFromB(), `seed ${seed}`).toBe(1);
    await c.clock.advanceUntil(() => c.converged(), 10_000, 50);
  });

  it('gives up at once when stopped while waiting to try again: its start settles, no timer or later round is left', async () => {
    const seed = 75;
    cluster = await loaded(seed);
    cluster.crash('peer-b');
    const c = cluster;
    // peer-a stays busy: peer-b's sync waits 1 s, 2 s, 4 s... between rounds (not ready meanwhile).
    const held = Array.from({ length: 4 }, () => c.node('peer-a').peerApi.openSnapshotStream({ from: 'peer-z' }));
    for (const stream of held) await stream.next();
    const calls = spy(c.node('peer-a').peerApi);
    const stopAtMs = c.clock.nowMs() + 5_000;
    let streamsAtStop = 0;
    c.clock.setTimeout(() => {
      streamsAtStop = calls.streams();
      void c.nodes.get('peer-b')!.stop();
    }, 5_000);
    const stopped = await c.restart('peer-b');
    // Before the fix the start settled only when the wait of that round (4 s, from about +3.1 s) ran out.
    expect(c.clock.nowMs() - stopAtMs, `seed ${seed}`).toBeLessThan(100);
    expect(stopped.ready).toBe(false);
    expect(streamsAtStop).toBeGreaterThan(1);
    await c.clock.advance(60_000);
    expect(calls.streams(), `seed ${seed}`).toBe(streamsAtStop);
    await Promise.all(held.map((stream) => stream.return(undefined)));
  });

  it('waits out a serving peer busy with 4 streams (REG_ERR_SNAPSHOT_BUSY) instead of starting alone', async () => {
    const seed = 74;
    cluster = await loaded(seed);
    cluster.crash('peer-b');
    const c = cluster;
    const held = Array.from({ length: 4 }, () => c.node('peer-a').peerApi.openSnapshotStream({ from: 'peer-z' })[Symbol.asyncIterator]());
    for (const stream of held) await stream.next();
    let readyAt3s: boolean | undefined;
    c.clock.setTimeout(() => (readyAt3s = c.nodes.get('peer-b')?.ready), 3_000);
    c.clock.setTimeout(() => void Promise.all(held.map((stream) => stream.return?.(undefined))), 4_000);
    const restarted = await c.restart('peer-b');
    expect(readyAt3s, `seed ${seed}`).toBe(false);
    expect(restarted.bootstrapResult, `seed ${seed}`).toEqual({ from: 'peer-a', records: INSTANCES });
  });

  it.each([75, 76])("is not compared with by the serving peer's own rounds while it streams: they end at the digest, nothing pushed twice (seed %i)", async (seed) => {
    cluster = await loaded(seed);
    cluster.crash('peer-b');
    const c = cluster;
    const a = c.node('peer-a');
    // peer-a's frames 2.5 s apart: its rounds (every 3 s, jittered) meet peer-b mid-stream.
    const open = a.peerApi.openSnapshotStream!.bind(a.peerApi);
    vi.spyOn(a.peerApi as Required<PeerApi>, 'openSnapshotStream').mockImplementation((body) => slowed(c, open(body), 2_500));
    const before = { ...a.antiEntropy.stats };
    const repairsReceived: number[] = [];
    const restarting = c.launch('peer-b');
    const api = restarting.node.peerApi;
    const handle = ((method, body) => {
      if (method === 'replicate' && (body as { repair?: boolean }).repair === true) repairsReceived.push((body as { records: unknown[] }).records.length);
      return api.handle(method, body);
    }) as PeerApi['handle'];
    c.network.attach('peer-b', { handle, openSnapshotStream: (body) => api.openSnapshotStream!(body) });
    await c.whileAdvancing(restarting.started);
    const during = { ...a.antiEntropy.stats };
    expect(restarting.node.bootstrapResult, `seed ${seed}`).toEqual({ from: 'peer-a', records: INSTANCES });
    // Before, each of these rounds found most buckets differing and pushed peer-b what the stream was about to send.
    expect(during.keysPushed - before.keysPushed, `seed ${seed}`).toBe(0);
    expect(repairsReceived, `seed ${seed}`).toEqual([]);
    expect(during.roundsDeferred - before.roundsDeferred, `seed ${seed}`).toBeGreaterThanOrEqual(2);
    // Once it is ready, rounds compare again.
    await c.advance(10_000);
    expect(a.antiEntropy.stats.roundsInSync, `seed ${seed}`).toBeGreaterThan(during.roundsInSync);
    expect(a.antiEntropy.stats.roundsDeferred, `seed ${seed}`).toBe(during.roundsDeferred);
    expect(c.converged(), `seed ${seed}`).toBe(true);
  });
});

/** `lines`, each held `gapMs` of virtual time before it is given. */
async function* slowed(c: TestCluster, lines: AsyncGenerator<string>, gapMs: number): AsyncGenerator<string> {
  for await (const line of lines) {
    await new Promise<void>((resolve) => c.clock.setTimeout(resolve, gapMs));
    yield line;
  }
}

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
    let observed: { bReady: boolean; bSettled: boolean; bSize: number; cReady: boolean; cSize: number; bPage: Promise<{ settled?: boolean }> } | undefined;
    let c0: { node: RegistryNode; started: Promise<void> } | undefined;
    const onlyB = { ...c.file, peers: c.file.peers.filter((peer) => peer.id !== 'peer-a') };
    c.clock.setTimeout(() => (c0 = c.launch('peer-c', onlyB)), 100);
    c.clock.setTimeout(() => {
      const nodeB = c.node('peer-b');
      const nodeC = c.node('peer-c');
      observed = {
        bReady: nodeB.ready,
        bSettled: nodeB.settled,
        bSize: nodeB.store.size,
        cReady: nodeC.ready,
        cSize: nodeC.store.size,
        // What a peer of any version reading pages from peer-b is told.
        bPage: nodeB.peerApi.handle('snapshot', { from: 'peer-z', fromBucket: 0, bucketSpan: 1 }),
      };
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
    expect((await observed.bPage).settled).toBe(false);
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
    /** Each peer as it reported ready: what it held, and its rounds deferred by a syncing peer. */
    const atReady: Array<{ id: string; size: number; deferred: number }> = [];
    for (const [i, id] of c.ids.entries()) {
      c.clock.setTimeout(() => {
        const peer = c.launch(id);
        void peer.started.then(() => atReady.push({ id, size: peer.node.store.size, deferred: peer.node.antiEntropy.stats.roundsDeferred }));
        launched.push(peer);
      }, offsetsMs[i]!);
    }
    await c.clock.advanceUntil(() => launched.length === c.ids.length, 1_000, 1);
    await c.whileAdvancing(Promise.all(launched.map(({ started }) => started)), 60_000);
    return { c, launched, atReady, tookMs: c.clock.nowMs() - startMs };
  }

  it.each([
    [91, [0, 0, 0]],
    [92, [0, 10, 30]],
    [93, [0, 25, 50]],
    [94, [5, 0, 45]],
  ])('all become ready, none waiting on another for good, and converge on every instance (seed %i, started at %j ms)', async (seed, offsetsMs) => {
    const { c, launched, atReady, tookMs } = await restartAll(seed, offsetsMs);
    // The round that ends each sync compared, though the other peer was itself still syncing.
    expect(atReady.map(({ id, deferred }) => ({ id, deferred }))).toEqual(expect.arrayContaining(c.ids.map((id) => ({ id, deferred: 0 }))));
    for (const { node } of launched) {
      expect(node.ready, node.config.self.id).toBe(true);
      // Each loaded its own 1,000 from its data dir and synced from another peer.
      expect(node.store.size).toBeGreaterThanOrEqual(2 * PER_PEER);
      expect(node.settled).toBe(true);
      expect((await node.peerApi.handle('snapshot', { from: 'peer-z', fromBucket: 0, bucketSpan: 1 })).settled).toBe(true);
    }
    // No peer needed more than a few rounds (a deadlock would run into whileAdvancing's bound).
    expect(tookMs).toBeLessThan(20_000);
    await c.clock.advanceUntil(() => c.converged(), 30_000, 50);
    for (const { node } of launched) expect(node.store.size).toBe(3 * PER_PEER);
  });
});
