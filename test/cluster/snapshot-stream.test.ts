import { afterEach, describe, expect, it, vi } from 'vitest';
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
});
