import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock/clock.js';
import { seededRng } from '../../src/clock/rng.js';
import { resolveConfig } from '../../src/config/load.js';
import { buildServer } from '../../src/http/server.js';
import { silentLogger } from '../../src/log/logger.js';
import { RegistryNode } from '../../src/node.js';
import { SNAPSHOT_FRAME_LIMIT_BYTES } from '../../src/replication/snapshot-frames.js';
import { SNAPSHOT_STREAMS_MAX } from '../../src/replication/snapshot-stream.js';
import { HttpTransport } from '../../src/transport/http-transport.js';
import { PeerCallError, type PeerDescriptor } from '../../src/transport/transport.js';
import { instance } from '../support/cluster.js';
import { waitFor } from '../support/process.js';
import { CLUSTER_SECRET, securedFile } from '../support/security.js';

/**
 * The snapshot stream over real sockets, in one process: a serving peer listening on
 * 127.0.0.1, a joining peer with the production HTTP transport, real time.
 */
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function configOf(selfId: string, peers: PeerDescriptor[], secured = false) {
  return resolveConfig({ ...(secured ? securedFile() : {}), cluster: { name: 'e2e' }, peers }, {}, { id: selfId });
}

function transportOf(selfId: string, secured = false): HttpTransport {
  const transport = new HttpTransport({
    connectionsPerPeer: 8,
    connectTimeoutMs: 2_000,
    selfRegion: 'local',
    compressMinBytes: 1_024,
    selfId,
    ...(secured ? { clusterSecret: CLUSTER_SECRET } : {}),
  });
  closers.push(() => transport.close());
  return transport;
}

/** A peer with `count` instances, its peer API listening on a free port of 127.0.0.1 (not started: it only serves). */
async function servingPeer(count: number, secured = false): Promise<{ node: RegistryNode; descriptor: PeerDescriptor }> {
  const config = configOf('peer-a', [{ id: 'peer-a', url: 'http://127.0.0.1:1', region: 'local', zone: 'a' }], secured);
  const node = new RegistryNode({ clock: systemClock, rng: seededRng(1), logger: silentLogger, transport: transportOf('peer-a', secured) }, config);
  for (let i = 0; i < count; i++) node.registry.register(instance(`i-${i}`, { service: `svc-${i % 20}`, leaseDurationMs: 600_000 }));
  const app = await buildServer({ node });
  await app.listen({ host: '127.0.0.1', port: 0 });
  closers.push(() => app.close());
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { node, descriptor: { id: 'peer-a', url: `http://127.0.0.1:${port}`, region: 'local', zone: 'a' } };
}

const streamOptions = { idleTimeoutMs: 10_000, maxDurationMs: 60_000, maxLineBytes: SNAPSHOT_FRAME_LIMIT_BYTES };

describe('the snapshot stream over HTTP', () => {
  it('brings a new peer every instance; the serving peer frees the stream when it ends', async () => {
    const serving = await servingPeer(12_345);
    const config = configOf('peer-b', [{ id: 'peer-b', url: 'http://127.0.0.1:1', region: 'local', zone: 'b' }, serving.descriptor]);
    const transport = transportOf('peer-b');
    const joining = new RegistryNode({ clock: systemClock, rng: seededRng(2), logger: silentLogger, transport }, config);
    closers.push(() => joining.stop());
    await joining.start();
    expect(joining.ready).toBe(true);
    expect(joining.bootstrapResult).toEqual({ from: 'peer-a', records: 12_345 });
    expect(joining.store.digest.rootHash()).toBe(serving.node.store.digest.rootHash());
    const calls = [...transport.peerBytes.entries()].filter((entry) => entry.peer === 'peer-a' && entry.direction === 'received').map((entry) => entry.call);
    expect(calls).toContain('snapshot-stream');
    expect(calls).not.toContain('snapshot');
    await waitFor(() => serving.node.peerApi.snapshotStreams.active === 0, 10_000, 'the serving peer to free the stream');
  }, 60_000);

  it(`answers a caller past ${SNAPSHOT_STREAMS_MAX} streams 503 REG_ERR_SNAPSHOT_BUSY, and frees a slot when a reader hangs up`, async () => {
    const serving = await servingPeer(20_000);
    const transport = transportOf('peer-b');
    const readers = Array.from({ length: SNAPSHOT_STREAMS_MAX }, () => transport.streamSnapshot(serving.descriptor, { from: 'peer-b' }, streamOptions));
    // Each reads its start frame and stops reading: the serving peer waits on backpressure.
    for (const reader of readers) expect(JSON.parse((await reader.next()).value as string)).toMatchObject({ t: 'start', size: 20_000 });
    expect(serving.node.peerApi.snapshotStreams.active).toBe(SNAPSHOT_STREAMS_MAX);
    const fifth = transport.streamSnapshot(serving.descriptor, { from: 'peer-b' }, streamOptions);
    const refusal = await fifth.next().then(
      () => null,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(PeerCallError);
    expect(refusal).toMatchObject({ status: 503, errorCode: 'REG_ERR_SNAPSHOT_BUSY', kind: 'congestion' });
    // A reader that gives up closes its connection; the serving peer's stream ends with it.
    await readers[0]!.return(undefined);
    await waitFor(() => serving.node.peerApi.snapshotStreams.active === SNAPSHOT_STREAMS_MAX - 1, 10_000, 'the serving peer to free the abandoned stream');
    for (const reader of readers.slice(1)) await reader.return(undefined);
    await waitFor(() => serving.node.peerApi.snapshotStreams.active === 0, 10_000, 'every stream to be freed');
  }, 60_000);

  it('is signed with the cluster secret like every peer call, and refused unsigned', async () => {
    const serving = await servingPeer(3_000, true);
    const signed = transportOf('peer-b', true);
    let records = 0;
    for await (const line of signed.streamSnapshot(serving.descriptor, { from: 'peer-b' }, streamOptions)) {
      const frame = JSON.parse(line) as { t: string; records?: unknown[] };
      records += frame.records?.length ?? 0;
    }
    expect(records).toBe(3_000);
    const unsigned = transportOf('peer-b');
    const refusal = await unsigned
      .streamSnapshot(serving.descriptor, { from: 'peer-b' }, streamOptions)
      .next()
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refusal).toMatchObject({ status: 401, errorCode: 'REG_ERR_UNAUTHORIZED', kind: 'permanent' });
  }, 60_000);
});
