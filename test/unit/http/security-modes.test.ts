import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { buildServer } from '../../../src/http/server.js';
import { createPinoLogger } from '../../../src/log/pino.js';
import { createTestNode } from '../../support/node.js';
import { basic, bearer, CLUSTER_SECRET, peerHeaders, recordingLogger, securedFile, TOKENS } from '../../support/security.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

const register = (headers: Record<string, string> = {}, body: Record<string, unknown> = {}) =>
  server!.app.inject({
    method: 'POST',
    url: '/v1/instances',
    headers,
    payload: { service: 'orders', host: '10.0.0.5', port: 8080, namespace: 'team-a', ...body },
  });

describe('dev mode (no tokens, no cluster secret)', () => {
  it('leaves every route open, ignoring any Authorization header', async () => {
    server = await createTestServer();
    expect((await register()).statusCode).toBe(201);
    expect((await register(bearer('whatever-the-client-sends'))).statusCode).toBe(200);
    expect((await server.app.inject({ url: '/v1/admin/eviction-guards' })).statusCode).toBe(200);
    expect((await server.app.inject({ method: 'POST', url: '/v1/peer/ping', payload: { from: { id: 'p', url: 'http://127.0.0.1:1', region: 'r', zone: '' }, members: [] } })).statusCode).toBe(200);
  });

  it('opens the client routes but guards the peer routes when only a cluster secret is set', async () => {
    server = await createTestServer({ file: { security: { clusterSecret: CLUSTER_SECRET } } });
    expect((await register()).statusCode).toBe(201);
    expect((await server.app.inject({ method: 'POST', url: '/v1/peer/ping', payload: {} })).statusCode).toBe(401);
  });

  it('guards the client routes but leaves peer routes open when only tokens are set', async () => {
    server = await createTestServer({ file: { security: { tokens: (securedFile().security as { tokens: unknown }).tokens } } });
    expect((await register()).statusCode).toBe(401);
    expect((await register(bearer(TOKENS.writer))).statusCode).toBe(201);
    const ping = await server.app.inject({ method: 'POST', url: '/v1/peer/ping', payload: { from: { id: 'p', url: 'http://127.0.0.1:1', region: 'r', zone: '' }, members: [] } });
    expect(ping.statusCode).toBe(200);
  });
});

describe('namespaces of a request', () => {
  it('checks the body namespace of a register, the query one, and both when repeated', async () => {
    server = await createTestServer({ file: securedFile() });
    expect((await register(bearer(TOKENS.writer))).statusCode).toBe(201);
    expect((await register(bearer(TOKENS.writer), { namespace: 'team-b' })).statusCode).toBe(403);
    // No namespace anywhere is `default`, which the team-a token may not use.
    const bare = await server.app.inject({ method: 'POST', url: '/v1/instances', headers: bearer(TOKENS.writer), payload: { service: 'orders', host: '10.0.0.5', port: 8080 } });
    expect(bare.statusCode).toBe(403);
    expect(bare.json().message).toBe('token writer may not use namespace default');
    const repeated = await server.app.inject({ url: '/v1/services?namespace=team-a&namespace=team-b', headers: bearer(TOKENS.reader) });
    expect(repeated.statusCode).toBe(403);
    expect((await server.app.inject({ url: '/v1/services?namespace=team-a', headers: bearer(TOKENS.reader) })).statusCode).toBe(200);
  });

  it('refuses another namespace with 403 before the body is validated (a bad body does not turn it into a 400)', async () => {
    server = await createTestServer({ file: securedFile() });
    const asleep = (namespace: string) =>
      server!.app.inject({ method: 'PUT', url: `/v1/services/orders/instances/x/status?namespace=${namespace}`, headers: bearer(TOKENS.writer), payload: { status: 'ASLEEP' } });
    const badStatus = await asleep('team-b');
    expect(badStatus.statusCode).toBe(403);
    expect(badStatus.json().message).toBe('token writer may not use namespace team-b');
    const badRegister = await register(bearer(TOKENS.writer), { namespace: 'team-b', port: 'eighty' });
    expect(badRegister.statusCode).toBe(403);
    // In its own namespace the same bodies are refused as invalid.
    const ownStatus = await asleep('team-a');
    expect(ownStatus.statusCode).toBe(400);
    expect((await register(bearer(TOKENS.writer), { port: 'eighty' })).statusCode).toBe(400);
  });

  it('checks the watch stream namespace before the stream starts', async () => {
    server = await createTestServer({ file: securedFile() });
    const refused = await server.app.inject({ url: '/v1/watch?namespace=team-b&services=orders', headers: bearer(TOKENS.reader) });
    expect(refused.statusCode).toBe(403);
    expect(server.node.watch.stats().subscribers).toBe(0);
  });

  it('maps the Eureka API to the configured namespace', async () => {
    server = await createTestServer({ file: securedFile() });
    await register(bearer(TOKENS.writer));
    const apps = await server.app.inject({ url: '/eureka/apps', headers: { ...basic(TOKENS.reader), accept: 'application/json' } });
    expect(apps.json().applications.application.map((app: { name: string }) => app.name)).toEqual(['ORDERS']);
    const other = await server.app.inject({ url: '/eureka/apps', headers: basic(TOKENS.otherTeam) });
    expect(other.statusCode).toBe(403);
  });
});

describe('rate limits', () => {
  it('answers 429 with Retry-After once a token spent its burst, and again after the refill', async () => {
    server = await createTestServer({ file: securedFile({ limits: { rateLimitPerSecond: 2, rateLimitBurst: 3 } }) });
    const get = (headers: Record<string, string>) => server!.app.inject({ url: '/v1/services?namespace=team-a', headers });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(bearer(TOKENS.reader))).statusCode);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await get(bearer(TOKENS.reader));
    expect(limited.json().code).toBe('REG_ERR_RATE_LIMITED');
    expect(limited.headers['retry-after']).toBe('1');
    // Another token has its own bucket.
    expect((await get(bearer(TOKENS.writer))).statusCode).toBe(200);
    await server.clock.advance(500);
    expect((await get(bearer(TOKENS.reader))).statusCode).toBe(200);
    expect((await get(bearer(TOKENS.reader))).statusCode).toBe(429);
  });

  it('limits requests without a valid token per address, probes included; peer routes are exempt', async () => {
    server = await createTestServer({ file: securedFile({ limits: { rateLimitPerSecond: 1, rateLimitBurst: 2 } }) });
    const statuses = [];
    for (const url of ['/healthz', '/v1/services', '/nowhere', '/readyz']) statuses.push((await server.app.inject({ url, remoteAddress: '10.0.0.9' })).statusCode);
    expect(statuses).toEqual([200, 401, 429, 429]);
    const nowMs = server.clock.nowMs();
    for (let i = 0; i < 5; i++) {
      const body = JSON.stringify({ from: { id: 'peer-x', url: 'http://127.0.0.1:9', region: 'r', zone: '' }, members: [] });
      const ping = await server.app.inject({ method: 'POST', url: '/v1/peer/ping', headers: { 'content-type': 'application/json', ...peerHeaders(body, { nowMs }) }, payload: body });
      expect(ping.statusCode).toBe(200);
    }
  });
});

describe('a route without an access policy', () => {
  it('is refused with 403 to every caller, and logged at error when it is added', async () => {
    const logger = recordingLogger();
    const { node } = await createTestNode({ file: securedFile(), logger });
    const app = await buildServer({ node });
    app.get('/v1/admin/new-thing', async () => ({ secret: 'data' }));
    await app.ready();
    const response = await app.inject({ url: '/v1/admin/new-thing', headers: bearer(TOKENS.root) });
    expect(response.statusCode).toBe(403);
    expect(response.json().message).toBe('GET /v1/admin/new-thing: this route has no access policy');
    expect(logger.lines).toContainEqual(expect.objectContaining({ level: 'error', fields: expect.objectContaining({ route: '/v1/admin/new-thing' }) }));
    await app.close();
  });
});

describe('what is logged', () => {
  it('never writes a token, the cluster secret or a signature to the log, even at trace level', async () => {
    let output = '';
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        output += String(chunk);
        callback();
      },
    });
    const pino = createPinoLogger('trace', sink);
    const { node, clock } = await createTestNode({ file: securedFile() });
    const app = await buildServer({ node, logger: pino });
    await app.ready();
    for (const token of Object.values(TOKENS)) {
      await app.inject({ url: '/v1/services?namespace=team-a', headers: bearer(token) });
      await app.inject({ url: '/eureka/apps', headers: basic(token) });
      await app.inject({ url: '/v1/services?namespace=team-a', headers: bearer(`${token}-wrong`) });
    }
    const signed = peerHeaders('{}', { nowMs: clock.nowMs() });
    await app.inject({ method: 'POST', url: '/v1/peer/ping', headers: { ...signed, 'content-type': 'application/json' }, payload: '{}' });
    pino.info({ req: { headers: { authorization: `Bearer ${TOKENS.root}` } }, token: TOKENS.root, config: { clusterSecret: CLUSTER_SECRET } }, 'an accident');
    await app.close();
    expect(output.length).toBeGreaterThan(1_000);
    for (const secret of [...Object.values(TOKENS), CLUSTER_SECRET, signed['x-registry-signature']!]) expect(output).not.toContain(secret);
    expect(output).toContain('[redacted]');
  });
});
