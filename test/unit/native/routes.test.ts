import { afterEach, describe, expect, it } from 'vitest';
import { renewalIntervalMs } from '../../../src/registry/lease-terms.js';
import { toRenewedView } from '../../../src/registry/view.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

const body = { service: 'orders', host: '10.0.0.5', port: 8080 };
const instanceUrl = '/v1/services/orders/instances/10.0.0.5:8080';

async function setup(file: Record<string, unknown> = {}) {
  server = await createTestServer({ file });
  const { app } = server;
  const register = (payload: unknown = body, query = '') =>
    app.inject({ method: 'POST', url: `/v1/instances${query}`, payload: payload as object });
  return { ...server, register };
}

describe('POST /v1/instances', () => {
  it('answers 201 with the stored instance and its lease, then 200 on re-register', async () => {
    const { register } = await setup();
    const first = await register({ ...body, metadata: { version: '1.2' }, zone: 'a', weight: 3 });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({
      namespace: 'default',
      service: 'orders',
      instanceId: '10.0.0.5:8080',
      host: '10.0.0.5',
      port: 8080,
      securePort: null,
      status: 'UP',
      weight: 3,
      zone: 'a',
      metadata: { version: '1.2' },
      owner: 'peer-1',
      leaseDurationMs: 30_000,
      leaseExpiresInMs: 30_000,
      heartbeatIntervalMs: 10_000,
    });
    expect(first.json().version).toMatch(/^[0-9a-f]{12}\.[0-9a-f]{6}\.peer-1$/);
    expect((await register({ ...body, metadata: { version: '1.2' }, zone: 'a', weight: 3 })).statusCode).toBe(200);
  });

  it('takes the namespace from the query or the body, and refuses a contradiction', async () => {
    const { app, register } = await setup();
    expect((await register(body, '?namespace=team-a')).json().namespace).toBe('team-a');
    expect((await register({ ...body, namespace: 'team-b' })).json().namespace).toBe('team-b');
    expect((await register({ ...body, namespace: 'team-b' }, '?namespace=team-b')).statusCode).toBe(200);
    const clash = await register({ ...body, namespace: 'team-b' }, '?namespace=team-c');
    expect(clash.statusCode).toBe(400);
    expect(clash.json().code).toBe('REG_ERR_NAMESPACE_MISMATCH');
    const listed = await app.inject({ url: '/v1/services/orders?namespace=team-a' });
    expect(listed.json().instances).toHaveLength(1);
    expect((await app.inject({ url: '/v1/services/orders' })).json().instances).toHaveLength(0);
  });

  it.each([
    [{ ...body, service: '' }, 'service'],
    [{ host: '10.0.0.5', port: 1 }, 'service'],
    [{ ...body, host: 'not a host' }, 'host'],
    [{ ...body, port: 0 }, 'port'],
    [{ ...body, port: 65536 }, 'port'],
    [{ ...body, weight: -1 }, 'weight'],
    [{ ...body, status: 'ASLEEP' }, 'status'],
    [{ ...body, metadata: { a: 1 } }, 'metadata.a'],
    [{ ...body, metadata: ['x'] }, 'metadata'],
    [{ ...body, metadata: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
    [{ ...body, metadata: { k: 'v'.repeat(513) } }, 'metadata.k'],
    [{ ...body, leaseDurationMs: 10 }, 'leaseDurationMs'],
    [{ ...body, instanceId: '.' }, 'instanceId'],
    [{ ...body, instanceId: '..' }, 'instanceId'],
    [{ ...body, metadata: { 'a\r\nb': 'v' } }, 'metadata'],
    [{ ...body, metadata: { 'a\u0000': 'v' } }, 'metadata'],
  ])('answers 400 REG_ERR_VALIDATION naming the field for %j', async (payload, field) => {
    const { app, register, node } = await setup();
    const response = await register(payload);
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('REG_ERR_VALIDATION');
    expect(response.json().message.startsWith(`${field}:`)).toBe(true);
    expect(node.store.size).toBe(0);
    expect(node.store.revision).toBe(0);
    expect((await app.inject({ url: '/v1/services' })).json().services).toEqual([]);
  });

  it('answers 400 for a bad namespace in the query', async () => {
    const { register } = await setup();
    const response = await register(body, '?namespace=has%20space');
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toMatch(/^namespace:/);
  });

  it('answers 400 REG_ERR_INVALID_JSON for a broken body', async () => {
    const { app } = await setup();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/instances',
      headers: { 'content-type': 'application/json' },
      payload: '{"service": "orders",',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('REG_ERR_INVALID_JSON');
  });

  it('answers 415 for a body that is not JSON', async () => {
    const { app } = await setup();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/instances',
      headers: { 'content-type': 'text/plain' },
      payload: 'service=orders',
    });
    expect(response.statusCode).toBe(415);
    expect(response.json().code).toBe('REG_ERR_UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers 413 for a body over the size limit, without reading it', async () => {
    const { register, node } = await setup({ limits: { bodyMaxBytes: 2_048 } });
    const response = await register({ ...body, metadata: { big: 'x'.repeat(4_000) } });
    expect(response.statusCode).toBe(413);
    expect(response.json().code).toBe('REG_ERR_BODY_TOO_LARGE');
    expect(node.store.size).toBe(0);
  });
});

describe('instance routes', () => {
  it('heartbeats a known instance and answers 404 for an unknown one', async () => {
    const { app, register, clock } = await setup();
    await register();
    await clock.advance(20_000);
    const beat = await app.inject({ method: 'PUT', url: `${instanceUrl}/heartbeat` });
    expect(beat.statusCode).toBe(200);
    expect(beat.json()).toMatchObject({ leaseExpiresInMs: 30_000, heartbeatIntervalMs: 10_000 });
    const unknown = await app.inject({ method: 'PUT', url: '/v1/services/orders/instances/nope/heartbeat' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('REG_ERR_INSTANCE_NOT_FOUND');
    const otherNamespace = await app.inject({ method: 'PUT', url: `${instanceUrl}/heartbeat?namespace=other` });
    expect(otherNamespace.statusCode).toBe(404);
  });

  it('answers a heartbeat with the bytes of the renewed view, heartbeat after heartbeat and after the record changes', async () => {
    const { app, node, register, clock } = await setup({ cluster: { heartbeatIntervalMs: 5_000 } });
    await register({ ...body, metadata: { 'a"quote': 'é\n', version: '2' }, zone: 'a', leaseDurationMs: 12_000 });
    const key = { namespace: 'default', service: 'orders', instanceId: '10.0.0.5:8080' };
    const expected = () => {
      const entry = node.registry.find(key)!;
      return JSON.stringify(toRenewedView(entry, node.registry.leaseView(), renewalIntervalMs(entry.record, node.config.cluster.heartbeatIntervalMs)));
    };
    for (let beat = 0; beat < 3; beat++) {
      await clock.advance(1_000);
      const answer = await app.inject({ method: 'PUT', url: `${instanceUrl}/heartbeat` });
      expect(answer.statusCode).toBe(200);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.body).toBe(expected());
    }
    // A status change writes a new record: the answer follows it.
    await app.inject({ method: 'PUT', url: `${instanceUrl}/status`, payload: { status: 'DOWN' } });
    const after = await app.inject({ method: 'PUT', url: `${instanceUrl}/heartbeat` });
    expect(after.json().status).toBe('DOWN');
    expect(after.body).toBe(expected());
  });

  it('gets one instance, and answers 404 once it is cancelled', async () => {
    const { app, register } = await setup();
    await register();
    const got = await app.inject({ url: instanceUrl });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toMatchObject({ instanceId: '10.0.0.5:8080', host: '10.0.0.5' });
    const cancelled = await app.inject({ method: 'DELETE', url: instanceUrl });
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ instanceId: '10.0.0.5:8080', cancelled: true });
    expect((await app.inject({ url: instanceUrl })).statusCode).toBe(404);
    const again = await app.inject({ method: 'DELETE', url: instanceUrl });
    expect(again.statusCode).toBe(404);
    expect(again.json().code).toBe('REG_ERR_INSTANCE_NOT_FOUND');
    expect((await app.inject({ method: 'PUT', url: `${instanceUrl}/heartbeat` })).statusCode).toBe(404);
  });

  it('changes the status, and only UP instances are listed by default', async () => {
    const { app, register } = await setup();
    await register();
    const changed = await app.inject({ method: 'PUT', url: `${instanceUrl}/status`, payload: { status: 'OUT_OF_SERVICE' } });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().status).toBe('OUT_OF_SERVICE');
    expect((await app.inject({ url: '/v1/services/orders' })).json().instances).toEqual([]);
    const all = await app.inject({ url: '/v1/services/orders?status=all' });
    expect(all.json().instances.map((i: { status: string }) => i.status)).toEqual(['OUT_OF_SERVICE']);
    expect((await app.inject({ url: '/v1/services' })).json().services).toEqual([{ service: 'orders', instances: 1, up: 0 }]);
  });

  it.each([
    [{ status: 'NAPPING' }, 400, 'REG_ERR_VALIDATION'],
    [{}, 400, 'REG_ERR_VALIDATION'],
    [[1], 400, 'REG_ERR_VALIDATION'],
  ])('refuses the status body %j', async (payload, status, code) => {
    const { app, register, node } = await setup();
    await register();
    const revision = node.store.revision;
    const response = await app.inject({ method: 'PUT', url: `${instanceUrl}/status`, payload: payload as object });
    expect(response.statusCode).toBe(status);
    expect(response.json().code).toBe(code);
    expect(node.store.revision).toBe(revision);
  });

  it('answers 404 for the status of an unknown instance', async () => {
    const { app } = await setup();
    const response = await app.inject({ method: 'PUT', url: `${instanceUrl}/status`, payload: { status: 'UP' } });
    expect(response.statusCode).toBe(404);
  });

  it('serves instance ids up to the 256 characters register accepts (past the router default of 100)', async () => {
    const { app, register } = await setup();
    const instanceId = 'i'.repeat(256);
    expect((await register({ ...body, instanceId })).statusCode).toBe(201);
    const beat = await app.inject({ method: 'PUT', url: `/v1/services/orders/instances/${instanceId}/heartbeat` });
    expect(beat.statusCode).toBe(200);
  });

  it('refuses malformed names in the path', async () => {
    const { app } = await setup();
    const response = await app.inject({ method: 'PUT', url: '/v1/services/-bad/instances/x/heartbeat' });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toMatch(/^service:/);
  });
});

describe('GET /v1/services/{service}', () => {
  it('answers an unknown service with an empty list and revision 0', async () => {
    const { app } = await setup();
    const response = await app.inject({ url: '/v1/services/nothing' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ namespace: 'default', service: 'nothing', revision: 0, protected: false, instances: [] });
    expect(response.headers['x-registry-index']).toBe('0');
  });

  it('lists instances sorted by id, carries the revision, and drops expired leases', async () => {
    const { app, register, clock } = await setup();
    await register({ ...body, instanceId: 'b', leaseDurationMs: 5_000 });
    await register({ ...body, instanceId: 'a' });
    const listed = await app.inject({ url: '/v1/services/orders' });
    expect(listed.json().instances.map((i: { instanceId: string }) => i.instanceId)).toEqual(['a', 'b']);
    expect(listed.headers['x-registry-index']).toBe(String(listed.json().revision));
    await clock.advance(5_000);
    const later = await app.inject({ url: '/v1/services/orders' });
    expect(later.json().instances.map((i: { instanceId: string }) => i.instanceId)).toEqual(['a']);
    expect(later.json().revision).toBeGreaterThan(listed.json().revision);
  });

  it('refuses an unknown status filter', async () => {
    const { app } = await setup();
    expect((await app.inject({ url: '/v1/services/orders?status=down' })).statusCode).toBe(400);
  });
});

describe('GET /v1/services', () => {
  it('lists services with counts, and a service disappears with its last instance', async () => {
    const { app, register, clock } = await setup();
    await register({ ...body, service: 'billing' });
    await register({ ...body, instanceId: 'x', leaseDurationMs: 2_000 });
    const listed = await app.inject({ url: '/v1/services' });
    expect(listed.json().services).toEqual([
      { service: 'billing', instances: 1, up: 1 },
      { service: 'orders', instances: 1, up: 1 },
    ]);
    await clock.advance(3_000);
    expect((await app.inject({ url: '/v1/services' })).json().services).toEqual([{ service: 'billing', instances: 1, up: 1 }]);
  });
});

describe('ops routes', () => {
  it('answers /healthz and /readyz', async () => {
    const { app } = await setup();
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/readyz' })).json()).toEqual({ status: 'ready', peer: 'peer-1' });
  });

  it('answers /readyz with 503 before the peer has started', async () => {
    server = await createTestServer({ start: false });
    const response = await server.app.inject({ url: '/readyz' });
    expect(response.statusCode).toBe(503);
    expect(response.json().code).toBe('REG_ERR_NOT_READY');
  });

  it('answers an unknown route with 404 REG_ERR_ROUTE_NOT_FOUND', async () => {
    const { app } = await setup();
    const response = await app.inject({ url: '/v2/nothing' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ code: 'REG_ERR_ROUTE_NOT_FOUND', message: 'no route GET /v2/nothing' });
  });
});

describe('before the start-up sync is done', () => {
  it('answers client routes with 503 and Retry-After, but keeps probes, the peer API and /v1/cluster open', async () => {
    server = await createTestServer({ start: false });
    const { app } = server;
    for (const url of ['/v1/services/orders', '/v1/services', '/v1/watch', '/eureka/apps', '/eureka/v2/apps/ORDERS']) {
      const response = await app.inject({ url });
      expect(response.statusCode, url).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
    }
    const register = await app.inject({ method: 'POST', url: '/v1/instances', payload: body });
    expect(register.statusCode).toBe(503);
    expect(register.json().code).toBe('REG_ERR_NOT_READY');
    expect(server.node.store.size).toBe(0);
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/cluster' })).statusCode).toBe(200);
    const ping = await app.inject({ method: 'POST', url: '/v1/peer/ping', payload: { from: { id: 'p', url: 'http://127.0.0.1:1', region: 'r', zone: 'z' }, membersHash: '' } });
    expect(ping.statusCode).toBe(200);
  });
});
