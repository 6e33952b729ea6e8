import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import {
  SNAPSHOT_FRAME_MAX_BYTES,
  SNAPSHOT_FRAME_RECORDS,
  SnapshotStreamReader,
} from '../../../src/replication/snapshot-frames.js';
import { SNAPSHOT_STREAM_MAX_DURATION_MS, SNAPSHOT_STREAMS_MAX } from '../../../src/replication/snapshot-stream.js';
import { instance } from '../../support/cluster.js';
import { peerHeaders, securedFile, TOKENS, bearer } from '../../support/security.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

const URL = '/v1/peer/snapshot-stream';

function register(count: number): void {
  for (let i = 0; i < count; i++) server.node.registry.register(instance(`i-${i}`, { service: `svc-${i % 50}` }));
}

/** Reads a whole NDJSON answer through the receiver's checks; the records frames and their records. */
function readStream(body: string): { frames: number[]; records: Array<{ instanceId: string }>; lineBytes: number[] } {
  const lines = body.split('\n');
  expect(lines.pop()).toBe('');
  const reader = new SnapshotStreamReader();
  const frames: number[] = [];
  const records: Array<{ instanceId: string }> = [];
  for (const line of lines) {
    const frame = reader.accept(line);
    if (frame.t === 'records') {
      frames.push(frame.records.length);
      records.push(...(frame.records as Array<{ instanceId: string }>));
    }
  }
  reader.finish();
  return { frames, records, lineBytes: lines.map((line) => Buffer.byteLength(line) + 1) };
}

describe('POST /v1/peer/snapshot-stream', () => {
  it('streams every stored instance as NDJSON frames of at most 2,000 records and 96 KB', async () => {
    server = await createTestServer();
    register(5_001);
    const response = await server.app.inject({ method: 'POST', url: URL, payload: { from: 'peer-x' } });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const { frames, records, lineBytes } = readStream(response.body);
    expect(frames.reduce((sum, count) => sum + count, 0)).toBe(5_001);
    expect(new Set(records.map((r) => r.instanceId)).size).toBe(5_001);
    for (const count of frames) expect(count).toBeLessThanOrEqual(SNAPSHOT_FRAME_RECORDS);
    for (const bytes of lineBytes) expect(bytes).toBeLessThanOrEqual(SNAPSHOT_FRAME_MAX_BYTES);
    // Full frames: every one but the last holds at least three quarters of the cap.
    for (const bytes of lineBytes.slice(1, -2)) expect(bytes).toBeGreaterThan(0.75 * SNAPSHOT_FRAME_MAX_BYTES);
    expect(server.node.peerApi.snapshotStreams.active).toBe(0);
  });

  it('streams an empty registry as a start and an end frame', async () => {
    server = await createTestServer();
    const response = await server.app.inject({ method: 'POST', url: URL, payload: { from: 'peer-x' } });
    expect(response.statusCode).toBe(200);
    expect(readStream(response.body).frames).toEqual([]);
  });

  it("says in the start frame, and in each snapshot page, that a ready peer's registry is settled", async () => {
    server = await createTestServer();
    register(3);
    expect(server.node.ready).toBe(true);
    const stream = await server.app.inject({ method: 'POST', url: URL, payload: { from: 'peer-x' } });
    expect(JSON.parse(stream.body.split('\n')[0]!)).toMatchObject({ t: 'start', size: 3, settled: true });
    const page = await server.app.inject({ method: 'POST', url: '/v1/peer/snapshot', payload: { from: 'peer-x', fromBucket: 0, bucketSpan: 4096 } });
    expect(page.statusCode).toBe(200);
    expect(page.json()).toMatchObject({ nextBucket: null, settled: true });
    expect(page.json().records).toHaveLength(3);
  });

  it('answers 400 to a body without a caller, and changes nothing', async () => {
    server = await createTestServer();
    for (const payload of [{}, { from: 7 }, []]) {
      const response = await server.app.inject({ method: 'POST', url: URL, payload });
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(response.json().code).toBe('REG_ERR_VALIDATION');
    }
    expect(server.node.peerApi.snapshotStreams.active).toBe(0);
  });

  it(`answers a stream past the ${SNAPSHOT_STREAMS_MAX} being served 503 REG_ERR_SNAPSHOT_BUSY, and serves again once one ends`, async () => {
    server = await createTestServer();
    register(10);
    const held = Array.from({ length: SNAPSHOT_STREAMS_MAX }, () => server.node.peerApi.openSnapshotStream({ from: 'peer-y' })[Symbol.asyncIterator]());
    // Each holds its slot from the first line on.
    for (const stream of held) expect((await stream.next()).done).toBe(false);
    const busy = await server.app.inject({ method: 'POST', url: URL, payload: { from: 'peer-x' } });
    expect(busy.statusCode).toBe(503);
    expect(busy.json()).toMatchObject({ code: 'REG_ERR_SNAPSHOT_BUSY', message: expect.stringContaining('another peer') });
    expect(busy.headers['retry-after']).toBe('5');
    // A reader that gives up frees its slot.
    await held[0]!.return?.(undefined);
    const served = await server.app.inject({ method: 'POST', url: URL, payload: { from: 'peer-x' } });
    expect(served.statusCode).toBe(200);
    expect(readStream(served.body).records).toHaveLength(10);
  });

  it('frees the slot of a stream whose response was destroyed before its first line (a request aborted before the reply)', async () => {
    server = await createTestServer();
    register(10);
    // What the route hands fastify: a readable over the lines. Fastify destroys it unread when
    // the request's socket closed before the reply was sent; the generator never started.
    for (let i = 0; i < SNAPSHOT_STREAMS_MAX; i++) {
      const body = Readable.from(server.node.peerApi.openSnapshotStream({ from: 'peer-y' }));
      body.destroy();
      await new Promise((resolve) => body.once('close', resolve));
    }
    expect(server.node.peerApi.snapshotStreams.active).toBe(0);
    const served = await server.app.inject({ method: 'POST', url: URL, payload: { from: 'peer-x' } });
    expect(served.statusCode).toBe(200);
    expect(readStream(served.body).records).toHaveLength(10);
  });

  it('frees the slot of a stream ended by its reader before its first line', async () => {
    server = await createTestServer();
    const streams = Array.from({ length: SNAPSHOT_STREAMS_MAX }, () => server.node.peerApi.openSnapshotStream({ from: 'peer-y' }));
    expect(server.node.peerApi.snapshotStreams.active).toBe(SNAPSHOT_STREAMS_MAX);
    for (const stream of streams) await stream.return(undefined);
    expect(server.node.peerApi.snapshotStreams.active).toBe(0);
  });

  it('frees the slot of a stream its reader abandoned once the time cap has passed', async () => {
    server = await createTestServer();
    for (let i = 0; i < SNAPSHOT_STREAMS_MAX; i++) void server.node.peerApi.openSnapshotStream({ from: 'peer-y' });
    expect(server.node.peerApi.snapshotStreams.active).toBe(SNAPSHOT_STREAMS_MAX);
    server.clock.jump(SNAPSHOT_STREAM_MAX_DURATION_MS + 1);
    expect(server.node.peerApi.snapshotStreams.active).toBe(0);
    expect((await server.app.inject({ method: 'POST', url: URL, payload: { from: 'peer-x' } })).statusCode).toBe(200);
  });

  it('is a peer route: unsigned calls and client tokens get 401, a signed call is served', async () => {
    server = await createTestServer({ file: securedFile() });
    const body = JSON.stringify({ from: 'peer-x' });
    const json = { 'content-type': 'application/json' };
    const unsigned = await server.app.inject({ method: 'POST', url: URL, headers: json, payload: body });
    expect(unsigned.statusCode).toBe(401);
    const token = await server.app.inject({ method: 'POST', url: URL, headers: { ...json, ...bearer(TOKENS.admin) }, payload: body });
    expect(token.statusCode).toBe(401);
    const signed = await server.app.inject({
      method: 'POST',
      url: URL,
      headers: { ...json, ...peerHeaders(body, { path: URL, nowMs: server.clock.nowMs() }) },
      payload: body,
    });
    expect(signed.statusCode, signed.body).toBe(200);
    expect(readStream(signed.body).records).toEqual([]);
  });
});
