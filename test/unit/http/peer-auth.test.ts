import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { PEER_HEADERS } from '../../../src/security/peer-signature.js';
import { record } from '../../support/records.js';
import { bearer, CLUSTER_SECRET, peerHeaders, recordingLogger, securedFile, TOKENS } from '../../support/security.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

/** A replicate call carrying one new record, as JSON bytes. */
function replicateBody(nowMs: number, instanceId = 'forged-1'): string {
  const rec = { ...record({ wallMs: nowMs, peerId: 'peer-x', instanceId, namespace: 'team-a' }), leaseRemainingMs: 60_000 };
  return JSON.stringify({ from: 'peer-x', records: [rec] });
}

const PATH = '/v1/peer/replicate';

async function send(body: Buffer | string, headers: Record<string, string>, url = PATH) {
  return server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: body });
}

/** Sends a call that must be refused, and checks that nothing it carried was applied. */
async function expectRefused(body: Buffer | string, headers: Record<string, string>, message: RegExp, url = PATH): Promise<void> {
  const revision = server.node.store.revision;
  const response = await send(body, headers, url);
  expect(response.statusCode, response.body).toBe(401);
  expect(response.json()).toMatchObject({ code: 'REG_ERR_UNAUTHORIZED', message: expect.stringMatching(message) });
  expect(server.node.store.revision).toBe(revision);
  expect(server.node.registry.find({ namespace: 'team-a', service: 'orders', instanceId: 'forged-1' })).toBeUndefined();
}

describe('peer authentication with the cluster secret', () => {
  it('applies a signed replication batch', async () => {
    server = await createTestServer({ file: securedFile() });
    const body = replicateBody(server.clock.nowMs());
    const response = await send(body, peerHeaders(body, { path: PATH, nowMs: server.clock.nowMs() }));
    expect(response.json()).toEqual({ applied: 1, ignored: 0, invalid: 0 });
    expect(server.node.registry.find({ namespace: 'team-a', service: 'orders', instanceId: 'forged-1' })).toBeDefined();
  });

  it('refuses a forged call (another secret, or no signature) and applies nothing', async () => {
    server = await createTestServer({ file: securedFile() });
    const nowMs = server.clock.nowMs();
    const body = replicateBody(nowMs);
    await expectRefused(body, peerHeaders(body, { path: PATH, nowMs, secret: 'not-the-cluster-secret-but-long-enough-0' }), /bad signature/);
    await expectRefused(body, {}, /not signed/);
    await expectRefused(body, bearer(TOKENS.root), /not signed/);
    await expectRefused(body, bearer(CLUSTER_SECRET), /not signed/);
  });

  it('refuses a replayed call, even when the first one was applied', async () => {
    server = await createTestServer({ file: securedFile() });
    const nowMs = server.clock.nowMs();
    const body = replicateBody(nowMs, 'first');
    const headers = peerHeaders(body, { path: PATH, nowMs });
    expect((await send(body, headers)).statusCode).toBe(200);
    const revision = server.node.store.revision;
    await server.clock.advance(1_000);
    const again = await send(body, headers);
    expect(again.statusCode).toBe(401);
    expect(again.json().message).toMatch(/replayed/);
    expect(server.node.store.revision).toBe(revision);
  });

  it('refuses a tampered call: body, path, timestamp, nonce or peer id changed after signing', async () => {
    server = await createTestServer({ file: securedFile() });
    const nowMs = server.clock.nowMs();
    const honest = replicateBody(nowMs, 'honest');
    const headers = peerHeaders(honest, { path: PATH, nowMs });
    await expectRefused(replicateBody(nowMs), headers, /bad signature/);
    await expectRefused(honest, { ...headers, [PEER_HEADERS.timestamp]: String(nowMs + 1) }, /bad signature/);
    await expectRefused(honest, { ...headers, [PEER_HEADERS.nonce]: 'AAAAAAAAAAAAAAAAAAAAAA' }, /bad signature/);
    await expectRefused(honest, { ...headers, [PEER_HEADERS.peer]: 'peer-y' }, /bad signature/);
    await expectRefused(honest, { ...headers, [PEER_HEADERS.signature]: '0'.repeat(64) }, /bad signature/);
    // Signed for the snapshot method, sent to replicate.
    await expectRefused(honest, peerHeaders(honest, { path: '/v1/peer/snapshot', nowMs }), /bad signature/);
    // Extra query text is part of what is signed too.
    await expectRefused(honest, headers, /bad signature/, `${PATH}?x=1`);
    // The honest call still works afterwards: none of the refused ones used its nonce.
    expect((await send(honest, headers)).statusCode).toBe(200);
  });

  it('refuses calls outside the replay window, both ways, and accepts modest clock skew', async () => {
    server = await createTestServer({ file: securedFile({ security: { peerReplayWindowMs: 30_000 } }) });
    const nowMs = server.clock.nowMs();
    const body = replicateBody(nowMs);
    await expectRefused(body, peerHeaders(body, { path: PATH, nowMs: nowMs - 30_001 }), /outside the replay window/);
    await expectRefused(body, peerHeaders(body, { path: PATH, nowMs: nowMs + 30_001 }), /outside the replay window/);
    const skewed = await send(body, peerHeaders(body, { path: PATH, nowMs: nowMs + 20_000 }));
    expect(skewed.statusCode).toBe(200);
  });

  it('refuses malformed signing headers', async () => {
    server = await createTestServer({ file: securedFile() });
    const nowMs = server.clock.nowMs();
    const body = replicateBody(nowMs);
    const headers = peerHeaders(body, { path: PATH, nowMs });
    await expectRefused(body, { ...headers, [PEER_HEADERS.timestamp]: 'yesterday' }, /x-registry-timestamp/);
    await expectRefused(body, { ...headers, [PEER_HEADERS.nonce]: 'short' }, /x-registry-nonce/);
    await expectRefused(body, { ...headers, [PEER_HEADERS.signature]: 'zz' }, /x-registry-signature/);
    await expectRefused(body, { ...headers, [PEER_HEADERS.peer]: '../etc' }, /x-registry-peer/);
  });

  it('verifies the bytes as sent: a signed gzip body is accepted, a tampered one refused', async () => {
    server = await createTestServer({ file: securedFile() });
    const nowMs = server.clock.nowMs();
    const zipped = gzipSync(replicateBody(nowMs, 'zipped'));
    const gzipHeaders = { 'content-encoding': 'gzip' };
    const ok = await send(zipped, { ...gzipHeaders, ...peerHeaders(zipped, { path: PATH, nowMs }) });
    expect(ok.json()).toEqual({ applied: 1, ignored: 0, invalid: 0 });
    const forged = gzipSync(replicateBody(nowMs));
    // Signed over the uncompressed JSON, sent compressed: the bytes differ.
    await expectRefused(forged, { ...gzipHeaders, ...peerHeaders(replicateBody(nowMs), { path: PATH, nowMs }) }, /bad signature/);
    const tampered = Buffer.from(forged);
    tampered[tampered.length - 5]! ^= 1;
    await expectRefused(tampered, { ...gzipHeaders, ...peerHeaders(forged, { path: PATH, nowMs }) }, /bad signature/);
  });

  it('verifies a bodiless call as an empty body', async () => {
    server = await createTestServer({ file: securedFile() });
    const nowMs = server.clock.nowMs();
    const signed = await server.app.inject({ method: 'POST', url: '/v1/peer/ping', headers: peerHeaders('', { nowMs }) });
    expect(signed.statusCode).toBe(400);
    expect(signed.json().code).toBe('REG_ERR_VALIDATION');
    const forged = await server.app.inject({ method: 'POST', url: '/v1/peer/ping', headers: peerHeaders('', { nowMs, secret: 'x'.repeat(40) }) });
    expect(forged.statusCode).toBe(401);
  });

  it('refuses a signed call of another content type with 415, applies nothing and throws nothing', async () => {
    server = await createTestServer({ file: securedFile() });
    const nowMs = server.clock.nowMs();
    for (const secret of [CLUSTER_SECRET, 'z'.repeat(40)]) {
      const body = replicateBody(nowMs);
      const response = await send(body, { ...peerHeaders(body, { path: PATH, nowMs, secret }), 'content-type': 'text/plain' });
      expect(response.statusCode).toBe(415);
    }
    expect(server.node.store.revision).toBe(0);
  });

  it('logs a refused call at warn without the signature, and at most once per 10 s per reason', async () => {
    const logger = recordingLogger();
    server = await createTestServer({ file: securedFile(), logger });
    const nowMs = server.clock.nowMs();
    const body = replicateBody(nowMs);
    for (let i = 0; i < 3; i++) await send(body, peerHeaders(body, { path: PATH, nowMs, secret: 'y'.repeat(40) }));
    const refusals = logger.lines.filter((line) => line.msg === 'peer request refused');
    expect(refusals.map((line) => line.level)).toEqual(['warn', 'debug', 'debug']);
    expect(JSON.stringify(logger.lines)).not.toMatch(/[0-9a-f]{64}/);
  });

  it('answers 429 to an address that keeps failing, before reading more bodies', async () => {
    server = await createTestServer({ file: securedFile({ limits: { rateLimitPerSecond: 1, rateLimitBurst: 3 } }) });
    const nowMs = server.clock.nowMs();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await send('{}', { [PEER_HEADERS.peer]: 'peer-x' })).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    // A signed call from elsewhere is not affected (inject's address is 127.0.0.1 for all: wait instead).
    await server.clock.advance(2_000);
    const body = replicateBody(nowMs + 2_000, 'later');
    expect((await send(body, peerHeaders(body, { path: PATH, nowMs: nowMs + 2_000 }))).statusCode).toBe(200);
  });
});

describe('peer routes with mTLS only', () => {
  it('refuses a call without a verified client certificate, even when signed', async () => {
    server = await createTestServer({
      file: { ...securedFile(), security: { ...(securedFile().security as object), clusterSecret: undefined, peerMtls: true }, tls: { certFile: 'c', keyFile: 'k', caFile: 'a' } },
    });
    const body = replicateBody(server.clock.nowMs());
    await expectRefused(body, peerHeaders(body, { path: PATH, nowMs: server.clock.nowMs() }), /certificate/);
  });
});
