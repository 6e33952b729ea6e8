import { gunzipSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { peerMethods } from '../../../src/transport/transport.js';
import { record } from '../../support/records.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

const peerA = { id: 'peer-x', url: 'http://127.0.0.1:9999', region: 'r', zone: 'z' };

describe('POST /v1/peer/{method}', () => {
  it('answers a ping with its id and members, and learns the caller', async () => {
    server = await createTestServer();
    const response = await server.app.inject({ method: 'POST', url: '/v1/peer/ping', payload: { from: peerA, members: [] } });
    expect(response.statusCode).toBe(200);
    expect(response.json().id).toBe('peer-1');
    expect(server.node.membership.get('peer-x')?.descriptor).toEqual(peerA);
  });

  it('applies a replicated batch and counts invalid records without failing the batch', async () => {
    server = await createTestServer();
    const good = { ...record({ wallMs: server.clock.nowMs(), peerId: 'peer-x', instanceId: 'i-9' }), leaseRemainingMs: 5_000 };
    const response = await server.app.inject({
      method: 'POST',
      url: '/v1/peer/replicate',
      payload: { from: 'peer-x', records: [good, { nonsense: true }, good] },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ applied: 1, ignored: 1, invalid: 1 });
    expect(server.node.registry.find(good)?.record.owner).toBe('peer-x');
  });

  it('answers an unknown method with 404', async () => {
    server = await createTestServer();
    const response = await server.app.inject({ method: 'POST', url: '/v1/peer/steal', payload: {} });
    expect(response.statusCode).toBe(404);
    expect(response.json().code).toBe('REG_ERR_ROUTE_NOT_FOUND');
  });

  it.each(peerMethods)('answers 400, never 5xx, to a malformed %s body', async (method) => {
    server = await createTestServer();
    for (const payload of [[], { from: 7 }, { from: 'peer-x', records: 'x', entries: [[1]], buckets: [-1] }]) {
      const response = await server.app.inject({ method: 'POST', url: `/v1/peer/${method}`, payload });
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(response.json().code).toBe('REG_ERR_VALIDATION');
    }
  });

  it('never answers 5xx nor changes the store for arbitrary bodies (fuzz)', async () => {
    server = await createTestServer();
    const revision = server.node.store.revision;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...peerMethods), fc.jsonValue({ maxDepth: 4 }), async (method, body) => {
        const response = await server.app.inject({ method: 'POST', url: `/v1/peer/${method}`, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
        expect(response.statusCode).toBeLessThan(500);
      }),
      { numRuns: 500 },
    );
    expect(server.node.store.revision).toBe(revision);
  });
});

describe('gzip on the peer routes', () => {
  it('inflates a gzip request body and deflates a large answer for a caller that accepts gzip', async () => {
    server = await createTestServer();
    const records = Array.from({ length: 30 }, (_, i) => ({
      ...record({ wallMs: server.clock.nowMs(), peerId: 'peer-x', instanceId: `i-${i}` }),
      leaseRemainingMs: 5_000,
    }));
    const response = await server.app.inject({
      method: 'POST',
      url: '/v1/peer/replicate',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify({ from: 'peer-x', records })),
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ applied: 30, ignored: 0, invalid: 0 });
    const snapshot = await server.app.inject({
      method: 'POST',
      url: '/v1/peer/snapshot',
      headers: { 'accept-encoding': 'gzip' },
      payload: { from: 'peer-x', fromBucket: 0, bucketSpan: 4096 },
    });
    expect(snapshot.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(snapshot.rawPayload).toString()).records).toHaveLength(30);
    const small = await server.app.inject({ method: 'POST', url: '/v1/peer/ping', headers: { 'accept-encoding': 'gzip' }, payload: { from: peerA, membersHash: 'x' } });
    expect(small.headers['content-encoding']).toBeUndefined();
  });

  it('refuses a gzip body that is not gzip with 400, and one that inflates past the limit with 413', async () => {
    server = await createTestServer({ file: { limits: { peerBodyMaxBytes: 65_536 } } });
    const garbage = await server.app.inject({
      method: 'POST',
      url: '/v1/peer/replicate',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: 'not gzip at all',
    });
    expect(garbage.statusCode).toBe(400);
    expect(garbage.json()).toMatchObject({ code: 'REG_ERR_VALIDATION', message: expect.stringMatching(/^body: is not valid gzip/) });
    const bomb = await server.app.inject({
      method: 'POST',
      url: '/v1/peer/replicate',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify({ from: 'peer-x', records: [], pad: 'x'.repeat(1_000_000) })),
    });
    expect(bomb.statusCode).toBe(413);
  });
});

describe('GET /v1/cluster', () => {
  it('shows this peer, the others with their state, and the replication figures', async () => {
    server = await createTestServer({
      file: { id: 'peer-1', peers: [{ id: 'peer-1', url: 'http://127.0.0.1:8761' }, { id: 'peer-2', url: 'http://127.0.0.1:8762', region: 'eu', zone: 'b' }] },
    });
    const body = (await server.app.inject({ url: '/v1/cluster' })).json();
    expect(body.self).toMatchObject({ id: 'peer-1', ready: true, records: 0, instances: 0, syncedFrom: null });
    expect(body.peers).toEqual([
      expect.objectContaining({ id: 'peer-2', region: 'eu', zone: 'b', state: 'up', replication: expect.objectContaining({ queued: 0 }) }),
    ]);
    expect(body).toHaveProperty('antiEntropy.rounds');
    expect(body).toHaveProperty('inbound.applied', 0);
  });
});
