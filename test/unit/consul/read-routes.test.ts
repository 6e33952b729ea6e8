import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ServiceEncoding } from '../../../src/consul/encodings.js';
import { settle } from '../../support/fake-clock.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';

let t: TestConsul;
afterEach(async () => t?.close());

const register = (id: string, over: Record<string, unknown> = {}) =>
  t.app.inject({
    method: 'PUT',
    url: '/v1/agent/service/register',
    payload: { Name: 'web', ID: id, Address: '10.0.0.1', Port: 8080, Tags: ['v1'], Check: { TTL: '30s', Status: 'passing' }, ...over },
  });
const nativeRegister = (body: Record<string, unknown>) => t.native.inject({ method: 'POST', url: '/v1/instances', payload: { host: '10.0.0.9', port: 9000, ...body } });
const get = (url: string) => t.app.inject({ url });
const ids = (entries: { Service: { ID: string } }[]) => entries.map((entry) => entry.Service.ID);

/** Starts a request and says when it has answered. */
function pending(url: string) {
  const state = { done: false, response: undefined as Awaited<ReturnType<typeof get>> | undefined };
  const promise = get(url).then((response) => {
    state.done = true;
    state.response = response;
    return response;
  });
  return { state, promise };
}

describe('catalog and health reads', () => {
  it('GET /v1/catalog/services lists each service with its tags, /v1 registrations included, with Consul headers', async () => {
    t = await createTestConsul();
    await register('web-1', { Tags: ['v1', 'primary'] });
    await register('web-2', { Tags: ['v2'] });
    await nativeRegister({ service: 'api', metadata: { 'consul.tags': '["rest"]' } });
    const response = await get('/v1/catalog/services');
    expect(response.json()).toEqual({ api: ['rest'], web: ['primary', 'v1', 'v2'] });
    expect(response.headers).toMatchObject({ 'x-consul-index': String(t.blocking.indexes.catalog('default')), 'x-consul-knownleader': 'true', 'x-consul-lastcontact': '0' });
  });

  it('GET /v1/catalog/service/:name answers catalog entries; an unknown service is [] with a non-zero index', async () => {
    t = await createTestConsul();
    await register('web-1', { Meta: { team: 'a' } });
    const [entry] = (await get('/v1/catalog/service/web')).json();
    expect(entry).toMatchObject({ Node: '10.0.0.1', Address: '10.0.0.1', ServiceID: 'web-1', ServiceName: 'web', ServiceTags: ['v1'], ServicePort: 8080, ServiceAddress: '10.0.0.1', ServiceMeta: { team: 'a' } });
    const unknown = await get('/v1/catalog/service/nothing');
    expect(unknown.json()).toEqual([]);
    expect(Number(unknown.headers['x-consul-index'])).toBeGreaterThan(0);
    expect(unknown.headers['x-consul-index']).toBe(String(t.blocking.indexes.floor));
  });

  it('GET /v1/health/service/:name filters by passing and by every tag asked', async () => {
    t = await createTestConsul();
    await register('web-1', { Tags: ['v1', 'primary'] });
    await register('web-2', { Tags: ['v1'] });
    await register('web-3', { Tags: ['v1'], Check: { TTL: '30s' } }); // critical
    expect(ids((await get('/v1/health/service/web')).json())).toEqual(['web-1', 'web-2', 'web-3']);
    expect(ids((await get('/v1/health/service/web?passing')).json())).toEqual(['web-1', 'web-2']);
    expect(ids((await get('/v1/health/service/web?passing=false')).json())).toEqual(['web-1', 'web-2', 'web-3']);
    expect(ids((await get('/v1/health/service/web?passing=1&tag=v1&tag=primary')).json())).toEqual(['web-1']);
    expect((await get('/v1/catalog/service/web?tag=primary')).json().map((e: { ServiceID: string }) => e.ServiceID)).toEqual(['web-1']);
  });

  it('shows a /v1 instance that is not UP as critical, and an OUT_OF_SERVICE Consul instance in maintenance', async () => {
    t = await createTestConsul();
    await nativeRegister({ service: 'web', instanceId: 'native-1', status: 'STARTING' });
    await register('web-1');
    await t.native.inject({ method: 'PUT', url: '/v1/services/web/instances/web-1/status', payload: { status: 'OUT_OF_SERVICE' } });
    const entries = (await get('/v1/health/service/web')).json();
    expect(entries.map((e: { Checks: { CheckID: string; Status: string }[] }) => e.Checks.slice(1).map((c) => `${c.CheckID}=${c.Status}`))).toEqual([
      ['service:native-1=critical'],
      ['service:web-1=passing', '_service_maintenance:web-1=critical'],
    ]);
    expect((await get('/v1/health/service/web?passing')).json()).toEqual([]);
  });

  it('maps dc to the region of an instance zone, sorts by near zone, and answers 500 for an unknown dc', async () => {
    const file = {
      cluster: { name: 'c' },
      peers: [
        { id: 'peer-1', url: 'http://127.0.0.1:8761', region: 'eu', zone: 'eu-1' },
        { id: 'peer-2', url: 'http://127.0.0.1:8762', region: 'us', zone: 'us-1' },
      ],
    };
    t = await createTestConsul({ file: { ...file, id: 'peer-1' } });
    await nativeRegister({ service: 'web', instanceId: 'us-a', zone: 'us-1' });
    await nativeRegister({ service: 'web', instanceId: 'eu-a', zone: 'eu-1' });
    const dcs = (await get('/v1/catalog/datacenters')).json();
    expect(dcs).toEqual(['eu', 'us']);
    expect(ids((await get('/v1/health/service/web?dc=us')).json())).toEqual(['us-a']);
    expect((await get('/v1/health/service/web?dc=us')).json()[0].Node.Datacenter).toBe('us');
    expect(ids((await get('/v1/health/service/web?near=us-1')).json())).toEqual(['us-a', 'eu-a']);
    expect(ids((await get('/v1/health/service/web?near=_agent')).json())).toEqual(['eu-a', 'us-a']);
    const unknown = await get('/v1/health/service/web?dc=mars');
    expect(unknown.statusCode).toBe(500);
    expect(unknown.body).toBe('No path to datacenter');
  });

  it('GET /v1/health/checks/:name lists the service checks only', async () => {
    t = await createTestConsul();
    await register('web-1');
    const checks = (await get('/v1/health/checks/web')).json();
    expect(checks.map((c: { CheckID: string }) => c.CheckID)).toEqual(['service:web-1']);
  });

  it.each(['/v1/health/service/web?filter=Service.Port%3D%3D80', '/v1/health/service/bad%20name', '/v1/health/service/web?index=x', '/v1/health/service/web?index=1&wait=soon'])('answers 400 to %s', async (url) => {
    t = await createTestConsul();
    const response = await get(url);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
  });
});

describe('blocking queries', () => {
  it('wakes a query on Web when web changes: one service whatever the case of its name', async () => {
    t = await createTestConsul();
    await register('web-1');
    const index = Number((await get('/v1/health/service/Web')).headers['x-consul-index']);
    const query = pending(`/v1/health/service/Web?index=${index}&wait=5m`);
    await settle();
    expect(query.state.done).toBe(false);
    await register('web-2', { Name: 'WEB' });
    const response = await query.promise;
    expect(ids(response.json())).toEqual(['web-1', 'web-2']);
    expect((await get('/v1/catalog/services')).json()).toEqual({ web: ['v1'] });
  });

  it('wakes on a change to its service only, then answers the new state and index', async () => {
    t = await createTestConsul();
    await register('web-1');
    await t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'api', ID: 'api-1', Address: '10.0.0.2', Port: 1 } });
    const index = Number((await get('/v1/health/service/web')).headers['x-consul-index']);
    const query = pending(`/v1/health/service/web?index=${index}&wait=5m&passing`);
    await settle();
    await t.clock.advance(1_000);
    expect(query.state.done).toBe(false);
    // A change to another service does not wake it.
    await t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'api', ID: 'api-2', Address: '10.0.0.2', Port: 2 } });
    await settle();
    expect(query.state.done).toBe(false);
    await register('web-2');
    const response = await query.promise;
    expect(ids(response.json())).toEqual(['web-1', 'web-2']);
    expect(Number(response.headers['x-consul-index'])).toBeGreaterThan(index);
  });

  it('answers the same index when the wait ends (plus at most 1/16 jitter), capped by consul.maxWaitMs', async () => {
    t = await createTestConsul({ file: { consul: { maxWaitMs: 10_000, defaultWaitMs: 5_000 } } });
    await register('web-1');
    const index = (await get('/v1/health/service/web')).headers['x-consul-index'];
    const query = pending(`/v1/health/service/web?index=${index}&wait=1h`);
    await settle();
    await t.clock.advance(9_999);
    expect(query.state.done).toBe(false);
    await t.clock.advance(700);
    expect((await query.promise).headers['x-consul-index']).toBe(index);
    const byDefault = pending(`/v1/catalog/service/web?index=${index}`);
    await settle();
    await t.clock.advance(5_400);
    expect(byDefault.state.done).toBe(true);
  });

  it('answers at once for index=0, an index already passed, or one beyond this peer (another peer, a restart)', async () => {
    t = await createTestConsul();
    await register('web-1');
    await register('web-2');
    for (const index of [0, 1, 1_000_000]) {
      const query = pending(`/v1/health/service/web?index=${index}&wait=5m`);
      await settle();
      expect(query.state.done).toBe(true);
    }
  });

  it('GET /v1/catalog/services blocks on the namespace: any service change wakes it', async () => {
    t = await createTestConsul();
    await register('web-1');
    const index = (await get('/v1/catalog/services')).headers['x-consul-index'];
    const query = pending(`/v1/catalog/services?index=${index}&wait=1m`);
    await settle();
    expect(query.state.done).toBe(false);
    await nativeRegister({ service: 'api' });
    expect((await query.promise).json()).toEqual({ api: [], web: ['v1'] });
  });

  it("answers brpc's query (?stale&passing&index=N): X-Consul-Index, Service.Address, Service.Port, Tags", async () => {
    t = await createTestConsul();
    await register('web-1', { Tags: ['shard-a'] });
    const first = await get('/v1/health/service/web?stale&passing');
    const index = first.headers['x-consul-index'];
    expect(index).toMatch(/^[1-9]\d*$/);
    const query = pending(`/v1/health/service/web?stale&passing&index=${index}&wait=60s`);
    await settle();
    await register('web-2', { Address: '10.0.0.2', Port: 8081 });
    const response = await query.promise;
    expect(response.headers['x-consul-index']).not.toBe(index);
    expect(response.json().map((e: { Service: { Address: string; Port: number; Tags: string[] } }) => [e.Service.Address, e.Service.Port, e.Service.Tags[0]])).toEqual([
      ['10.0.0.1', 8080, 'shard-a'],
      ['10.0.0.2', 8081, 'v1'],
    ]);
  });

  it('makes one answer per filter for every query a change wakes, and gathers the service list once for all', async () => {
    t = await createTestConsul();
    await register('web-1');
    const index = (await get('/v1/health/service/web')).headers['x-consul-index'];
    const catalogIndex = (await get('/v1/catalog/services')).headers['x-consul-index'];
    const waiters = 25;
    const tagged = Array.from({ length: waiters }, () => pending(`/v1/health/service/web?tag=v1&passing&index=${index}&wait=1m`));
    const plain = Array.from({ length: waiters }, () => pending(`/v1/health/service/web?index=${index}&wait=1m`));
    const lists = Array.from({ length: waiters }, () => pending(`/v1/catalog/services?index=${catalogIndex}&wait=1m`));
    await settle();
    expect(t.blocking.size).toBe(waiters * 3);
    const servicesOf = vi.spyOn(t.node.views, 'servicesOf');
    await register('web-2');
    const answers = await Promise.all([...tagged, ...plain, ...lists].map((query) => query.promise));
    const encoding = t.node.views.encoded<{ built?: ServiceEncoding }>('default', 'web', 'consul', () => ({})).built!;
    // One answer for the 25 `?tag=v1&passing` queries, one for the 25 unfiltered: not one each.
    expect(encoding.answersMade).toBe(2);
    expect(servicesOf).toHaveBeenCalledTimes(1);
    for (const group of [answers.slice(0, waiters), answers.slice(waiters, waiters * 2), answers.slice(waiters * 2)]) {
      for (const answer of group) {
        expect(answer.rawPayload.equals(group[0]!.rawPayload)).toBe(true);
        expect(answer.headers['x-consul-index']).toBe(group[0]!.headers['x-consul-index']);
      }
    }
    expect(ids(answers[0]!.json())).toEqual(['web-1', 'web-2']);
    expect(answers[waiters * 2]!.json()).toEqual({ web: ['v1'] });
  });

  it('answers 429 past consul.blockingQueriesMax', async () => {
    t = await createTestConsul({ file: { consul: { blockingQueriesMax: 1 } } });
    await register('web-1');
    const index = (await get('/v1/health/service/web')).headers['x-consul-index'];
    const held = pending(`/v1/health/service/web?index=${index}&wait=1m`);
    await settle();
    const refused = await get(`/v1/health/service/web?index=${index}&wait=1m`);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(t.blocking.size).toBe(1);
    await register('web-2');
    await held.promise;
    expect(t.blocking.size).toBe(0);
  });
});

describe('shared answers', () => {
  // Taken from the answers of e7ac54f's peer (each filtered body encoded per read, the headers
  // set per answer), before answers were shared per (view, filter, index) with their headers:
  // status, Content-Length and the body's SHA-256 (first 16 hex digits).
  it('are byte for byte what they were before they were shared, headers and body', async () => {
    t = await createTestConsul();
    await register('web-1', { Tags: ['v1', 'a'] });
    await register('web-2', { Address: '10.0.0.2', Port: 8081, Check: { TTL: '30s', Status: 'warning' } });
    await register('web-3', { Address: '10.0.0.3', Port: 8082, Tags: ['v2'] });
    const before: Record<string, string> = {
      '/v1/catalog/service/web': '200 1457 220222a6d43b02b7',
      '/v1/catalog/service/web?tag=v1&tag=a': '200 489 53669a95017e7e99',
      '/v1/catalog/services': '200 23 89105684f1fef598',
      '/v1/health/checks/web': '200 851 4702c110c85eb0a2',
      '/v1/health/checks/web?tag=v2': '200 283 8c0ba4b607294813',
      '/v1/health/service/web': '200 3078 44fb82542ac82045',
      '/v1/health/service/web?near=_agent': '200 3078 44fb82542ac82045',
      '/v1/health/service/web?passing': '200 2055 9d2c353dc64fa3d9',
      '/v1/health/service/web?tag=v1': '200 2055 f30182d879ea77f4',
      '/v1/health/service/web?tag=v1&passing': '200 1032 5935d693d2c74150',
    };
    for (const [url, expected] of Object.entries(before)) {
      const response = await get(url);
      const digest = createHash('sha256').update(response.rawPayload).digest('hex').slice(0, 16);
      expect(`${response.statusCode} ${response.headers['content-length']} ${digest}`, url).toBe(expected);
      expect(response.headers, url).toMatchObject({
        'x-consul-index': '1767225600000003',
        'x-consul-knownleader': 'true',
        'x-consul-lastcontact': '0',
        'content-type': 'application/json; charset=utf-8',
      });
    }
  });
});

describe('status and agent self', () => {
  it('answers this peer as leader, the live peers, and a minimal agent/self', async () => {
    t = await createTestConsul();
    expect((await get('/v1/status/leader')).json()).toBe('127.0.0.1:8500');
    expect((await get('/v1/status/peers')).json()).toEqual(['127.0.0.1:8500']);
    const self = (await get('/v1/agent/self')).json();
    expect(self.Config).toMatchObject({ Datacenter: t.node.config.self.region, NodeName: t.node.config.self.id, Server: true });
    expect(self.Member).toMatchObject({ Name: t.node.config.self.id, Port: 8500, Status: 1 });
  });

  it('answers a plain-text 404 for a route it does not serve (KV, sessions)', async () => {
    t = await createTestConsul();
    const response = await get('/v1/kv/some/key');
    expect(response.statusCode).toBe(404);
    expect(response.body).toMatch(/no Consul route GET \/v1\/kv\/some\/key/);
  });
});
