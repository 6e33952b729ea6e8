import { afterEach, describe, expect, it, vi } from 'vitest';
import { readsBudget } from '../../../src/http/loop-budget.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';
import { record } from '../../support/records.js';

let t: TestConsul;
afterEach(async () => {
  vi.restoreAllMocks();
  await t?.close();
});

const register = (body: Record<string, unknown>) => t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: body });
const web = (over: Record<string, unknown> = {}) => ({
  Name: 'web',
  ID: 'web-1',
  Address: '10.0.0.1',
  Port: 8080,
  Tags: ['v1', 'primary'],
  Meta: { version: '1.2' },
  Weights: { Passing: 5, Warning: 2 },
  Check: { TTL: '10s', DeregisterCriticalServiceAfter: '1m' },
  ...over,
});
const native = async (service = 'web') => (await t.native.inject({ url: `/v1/services/${service}?status=all` })).json().instances;
const health = async (query = '') => (await t.app.inject({ url: `/v1/health/service/web${query}` })).json();

describe('PUT /v1/agent/service/register', () => {
  it('stores one record that /v1 lists: ID, Address, Port, Weights, Meta as its metadata, and the tags and checks in its consul extension', async () => {
    t = await createTestConsul();
    const response = await register(web({ Check: { TTL: '10s', Status: 'passing', DeregisterCriticalServiceAfter: '1m' } }));
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('');
    const [instance] = await native();
    expect(instance).toMatchObject({ instanceId: 'web-1', host: '10.0.0.1', port: 8080, weight: 5, status: 'UP', leaseDurationMs: 70_000 });
    expect(instance.metadata).toEqual({ version: '1.2' });
    const stored = t.node.registry.find({ namespace: 'default', service: 'web', instanceId: 'web-1' })!.record.data;
    expect(stored.extensions?.consul).toMatchObject({ id: 'web-1', tags: ['v1', 'primary'], warningWeight: 2, checks: [{ id: 'service:web-1', status: 'passing' }] });
    const service = (await t.app.inject({ url: '/v1/agent/service/web-1' })).json();
    expect(service).toMatchObject({ ID: 'web-1', Service: 'web', Tags: ['v1', 'primary'], Meta: { version: '1.2' }, Port: 8080, Address: '10.0.0.1', Weights: { Passing: 5, Warning: 2 } });
  });

  it('is listed by the Eureka API as the same instance', async () => {
    t = await createTestConsul();
    await register(web({ Check: { TTL: '10s', Status: 'passing' } }));
    const app = (await t.native.inject({ url: '/eureka/v2/apps/WEB', headers: { accept: 'application/json' } })).json().application;
    expect(app.instance[0]).toMatchObject({ instanceId: 'web-1', ipAddr: '10.0.0.1', status: 'UP' });
  });

  it('reads lower-case fields as Go does (python-consul), defaults ID to the name and Address to the client', async () => {
    t = await createTestConsul();
    const response = await t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', remoteAddress: '10.9.9.9', payload: { name: 'py', port: 81, check: { ttl: '5s' } } });
    expect(response.statusCode).toBe(200);
    const [instance] = await native('py');
    expect(instance).toMatchObject({ instanceId: 'py', host: '10.9.9.9', port: 81 });
  });

  it('starts a TTL check critical (the instance DOWN, not passing) unless it says otherwise', async () => {
    t = await createTestConsul();
    await register(web());
    expect((await native())[0].status).toBe('DOWN');
    expect(await health('?passing')).toEqual([]);
    expect((await health())[0].Checks[1]).toMatchObject({ CheckID: 'service:web-1', Status: 'critical', Type: 'ttl' });
  });

  it('keeps the state of a check registered again without a Status', async () => {
    t = await createTestConsul();
    await register(web());
    await t.app.inject({ method: 'PUT', url: '/v1/agent/check/pass/service:web-1' });
    await register(web({ Tags: ['v2'] }));
    const [entry] = await health('?passing');
    expect(entry.Service.Tags).toEqual(['v2']);
  });

  it('names checks service:<ID>:<n> when there are several, and lists them all', async () => {
    t = await createTestConsul();
    await register(web({ Check: undefined, Checks: [{ TTL: '10s', Status: 'passing' }, { TTL: '20s', Name: 'disk', Status: 'warning' }] }));
    const checks = (await t.app.inject({ url: '/v1/health/checks/web' })).json();
    expect(checks.map((c: { CheckID: string; Status: string }) => [c.CheckID, c.Status])).toEqual([
      ['service:web-1:1', 'passing'],
      ['service:web-1:2', 'warning'],
    ]);
  });

  it.each([
    [{ Port: 8080 }, 'Name'],
    [web({ Port: undefined }), 'Port'],
    [web({ Port: 70000 }), 'Port'],
    [web({ Address: 'not a host!' }), 'Address'],
    [web({ ID: 'a/b' }), 'ID'],
    [web({ Tags: 'v1' }), 'Tags'],
    [web({ Meta: { 'consul.tags': 'x' } }), 'Meta'],
    [web({ Meta: { k: 1 } }), 'Meta.k'],
    [web({ Weights: { Passing: -1 } }), 'Weights.Passing'],
    [web({ Check: { HTTP: 'http://x/health', Interval: '10s' } }), 'Check.HTTP'],
    [web({ Check: { Interval: '10s' } }), 'Check.TTL'],
    [web({ Check: { TTL: 'soon' } }), 'Check.TTL'],
    [web({ Check: { TTL: '10s', Status: 'fine' } }), 'Check.Status'],
    [web({ Check: { TTL: '10s', DeregisterCriticalServiceAfter: 'never' } }), 'Check.DeregisterCriticalServiceAfter'],
    [web({ Connect: { Native: true } }), 'Connect'],
  ])('refuses %j with a 400 naming %s, and stores nothing', async (body, fieldName) => {
    t = await createTestConsul();
    const response = await register(body);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body.startsWith(fieldName)).toBe(true);
    expect(t.node.store.size).toBe(0);
  });

  it('answers 400 to a body that is not JSON', async () => {
    t = await createTestConsul();
    const response = await t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', headers: { 'content-type': 'application/json' }, payload: '{"Name":' });
    expect(response.statusCode).toBe(400);
    expect(response.body).toMatch(/^Request decode failed/);
  });
});

describe('deregister, agent services', () => {
  it('deregisters by ID (PUT, and GET as python-consul 0.7 sends it with consul.allowGetWrites); 404 for an unknown ID', async () => {
    t = await createTestConsul({ file: { consul: { allowGetWrites: true } } });
    await register(web());
    await register(web({ ID: 'web-2', Port: 8081 }));
    expect((await t.app.inject({ method: 'PUT', url: '/v1/agent/service/deregister/web-1' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/v1/agent/service/deregister/web-2' })).statusCode).toBe(200);
    expect(await native()).toEqual([]);
    const missing = await t.app.inject({ method: 'PUT', url: '/v1/agent/service/deregister/web-1' });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toMatch(/^Unknown service ID "web-1"/);
    expect((await t.app.inject({ url: '/v1/agent/service/web-1' })).statusCode).toBe(404);
  });

  it('lists the instances this peer holds the lease of, /v1 registrations included, and their checks', async () => {
    t = await createTestConsul();
    await register(web());
    await t.native.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'api', host: '10.0.0.2', port: 9000, instanceId: 'api-1' } });
    const services = (await t.app.inject({ url: '/v1/agent/services' })).json();
    expect(Object.keys(services).sort()).toEqual(['api-1', 'web-1']);
    expect(services['api-1']).toMatchObject({ Service: 'api', Tags: [], Port: 9000, Address: '10.0.0.2' });
    const checks = (await t.app.inject({ url: '/v1/agent/checks' })).json();
    expect(checks['service:web-1']).toMatchObject({ Status: 'critical', ServiceID: 'web-1' });
    expect(checks['service:api-1']).toMatchObject({ Status: 'passing', ServiceID: 'api-1' });
  });

  it("leaves out the instances another peer holds the lease of, and lists every own one when it yields while gathering", async () => {
    t = await createTestConsul();
    for (let i = 0; i < 450; i++) {
      await t.native.inject({ method: 'POST', url: '/v1/instances', payload: { service: `svc-${i % 2}`, host: '10.0.0.2', port: 9000, instanceId: `own-${i}` } });
    }
    const nowMs = t.clock.nowMs();
    t.node.registry.applyRemote(record({ service: 'svc-0', instanceId: 'theirs', peerId: 'peer-2', wallMs: nowMs }), 30_000);
    expect((await t.native.inject({ url: '/v1/services/svc-0/instances/theirs' })).statusCode).toBe(200);
    let looks = 0;
    vi.spyOn(readsBudget, 'spent').mockImplementation(() => ++looks > 0);
    const services = (await t.app.inject({ url: '/v1/agent/services' })).json();
    expect(Object.keys(services)).toHaveLength(450);
    expect(services['theirs']).toBeUndefined();
    expect(services['own-449']).toMatchObject({ Service: 'svc-1', Port: 9000 });
    // It looked at the budget every 200 instances of a service (svc-0 holds 226, svc-1 225),
    // and every 200 entries of the answer as it joined them.
    expect(looks).toBe(6);
    const checks = (await t.app.inject({ url: '/v1/agent/checks' })).json();
    expect(Object.keys(checks)).toHaveLength(450);
  });

  it('a register of an ID under another name moves it', async () => {
    t = await createTestConsul();
    await register(web());
    await register(web({ Name: 'www' }));
    expect(await native('web')).toEqual([]);
    expect((await native('www'))[0].instanceId).toBe('web-1');
  });
});

describe('TTL checks as heartbeats', () => {
  it('pass renews the lease; without passes the TTL sweep marks it critical; DeregisterCriticalServiceAfter removes it', async () => {
    t = await createTestConsul();
    await register(web({ Check: { TTL: '10s', DeregisterCriticalServiceAfter: '1m' } }));
    expect((await t.app.inject({ method: 'PUT', url: '/v1/agent/check/pass/service:web-1?note=ok' })).statusCode).toBe(200);
    expect((await health('?passing'))[0].Checks[1]).toMatchObject({ Status: 'passing', Output: 'ok' });
    for (let i = 0; i < 6; i++) {
      await t.clock.advance(8_000);
      await t.app.inject({ method: 'PUT', url: '/v1/agent/check/pass/service:web-1?note=ok' });
      t.writes.sweep();
    }
    expect(await health('?passing')).toHaveLength(1);
    // Silence: past the TTL the sweep marks it critical (DOWN everywhere), and a minute later it is gone.
    await t.clock.advance(11_000);
    t.writes.sweep();
    expect(await health('?passing')).toEqual([]);
    expect((await health())[0].Checks[1]).toMatchObject({ Status: 'critical', Output: expect.stringMatching(/^TTL expired/) });
    expect((await native())[0].status).toBe('DOWN');
    await t.clock.advance(61_000);
    expect(await health()).toEqual([]);
    expect(await native()).toEqual([]);
  });

  it('fail marks it critical at once and warn keeps it listed but not passing; update sets status and output', async () => {
    t = await createTestConsul();
    await register(web({ Check: { TTL: '10s', Status: 'passing' } }));
    await t.app.inject({ method: 'PUT', url: '/v1/agent/check/fail/service:web-1?note=down' });
    expect(await health('?passing')).toEqual([]);
    expect((await native())[0].status).toBe('DOWN');
    await t.app.inject({ method: 'PUT', url: '/v1/agent/check/warn/service:web-1' });
    expect((await native())[0].status).toBe('UP');
    expect(await health('?passing')).toEqual([]);
    expect((await health())[0].Checks[1].Status).toBe('warning');
    const update = await t.app.inject({ method: 'PUT', url: '/v1/agent/check/update/service:web-1', payload: { Status: 'passing', Output: 'all good' } });
    expect(update.statusCode).toBe(200);
    expect((await health('?passing'))[0].Checks[1]).toMatchObject({ Status: 'passing', Output: 'all good' });
  });

  it('a check passed on a peer that did not register it is found by its id', async () => {
    t = await createTestConsul();
    await register(web({ Check: { CheckID: 'custom-check', TTL: '10s' } }));
    // A fresh app on the same node knows nothing of the check: it finds it by scanning.
    const { buildConsulApp } = await import('../../../src/consul/app.js');
    const other = await buildConsulApp({ node: t.node, port: 8500 });
    expect((await other.app.inject({ method: 'PUT', url: '/v1/agent/check/pass/custom-check' })).statusCode).toBe(200);
    await other.app.close();
    expect(await health('?passing')).toHaveLength(1);
  });

  it.each([
    ['PUT', '/v1/agent/check/pass/nope', 404, /^Unknown check ID "nope"/],
    ['PUT', '/v1/agent/check/update/service:web-1', 400, /^Request decode failed/],
  ])('%s %s answers %d', async (method, url, status, text) => {
    t = await createTestConsul();
    await register(web());
    const response = await t.app.inject({ method: method as 'PUT', url });
    expect(response.statusCode).toBe(status);
    expect(response.body).toMatch(text);
  });

  it('refuses an update with an unknown status', async () => {
    t = await createTestConsul();
    await register(web());
    const response = await t.app.inject({ method: 'PUT', url: '/v1/agent/check/update/service:web-1', payload: { Status: 'great' } });
    expect(response.statusCode).toBe(400);
    expect(response.body).toMatch(/^Status/);
  });
});

describe('writes by GET (a cross-site link must not deregister)', () => {
  const writesByGet = ['/v1/agent/service/deregister/web-1', '/v1/agent/check/pass/service:web-1', '/v1/agent/check/warn/service:web-1', '/v1/agent/check/fail/service:web-1'];

  it('answers 405 with Allow: PUT to every write by GET, as Consul since 1.0, and changes nothing', async () => {
    t = await createTestConsul();
    await register(web({ Check: { TTL: '30s', Status: 'passing' } }));
    const before = (await t.app.inject({ url: '/v1/health/service/web' })).body;
    for (const url of writesByGet) {
      const answer = await t.app.inject({ method: 'GET', url });
      expect(answer.statusCode, url).toBe(405);
      expect(answer.headers.allow).toBe('PUT');
      expect(answer.body).toMatch(/send PUT.*consul\.allowGetWrites/);
    }
    expect((await t.app.inject({ url: '/v1/health/service/web' })).body).toBe(before);
  });

  it('with consul.allowGetWrites, still refuses a GET a browser made (Origin, Referer, Sec-Fetch-Site)', async () => {
    t = await createTestConsul({ file: { consul: { allowGetWrites: true } } });
    await register(web({ Check: { TTL: '30s', Status: 'passing' } }));
    for (const headers of [{ origin: 'https://evil.example' }, { referer: 'https://evil.example/page' }, { 'sec-fetch-site': 'cross-site' }]) {
      const answer = await t.app.inject({ method: 'GET', url: '/v1/agent/service/deregister/web-1', headers });
      expect(answer.statusCode).toBe(405);
      expect(answer.body).toMatch(/browser/);
    }
    expect(await native()).toHaveLength(1);
    expect((await t.app.inject({ method: 'GET', url: '/v1/agent/check/fail/service:web-1', headers: { 'sec-fetch-site': 'none' } })).statusCode).toBe(200);
  });
});

describe('routes that take no body', () => {
  it('accept an empty body whatever its content type (a client that sends content-type: application/json on every call)', async () => {
    t = await createTestConsul();
    await register(web({ Check: { TTL: '30s', Status: 'passing' } }));
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded']) {
      const pass = await t.app.inject({ method: 'PUT', url: '/v1/agent/check/pass/service:web-1', headers: { 'content-type': contentType } });
      expect(pass.statusCode, contentType).toBe(200);
    }
    const deregister = await t.app.inject({ method: 'PUT', url: '/v1/agent/service/deregister/web-1', headers: { 'content-type': 'application/json' } });
    expect(deregister.statusCode).toBe(200);
    expect(await native()).toEqual([]);
  });
});

describe('Consul IDs name the instance the Consul API registered, never another service\'s', () => {
  const nativeX = (service: string) => t.native.inject({ method: 'POST', url: '/v1/instances', payload: { service, host: '10.0.0.9', port: 9000, instanceId: 'x' } });

  it('a deregister of ID x removes the Consul-registered x only, not the /v1 instance x of another service', async () => {
    t = await createTestConsul();
    // `api` sorts before `web`: a lookup through the namespace's services meets its x first.
    expect((await nativeX('api')).statusCode).toBe(201);
    expect((await register(web({ ID: 'x', Check: { TTL: '30s', Status: 'passing' } }))).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'PUT', url: '/v1/agent/service/deregister/x' })).statusCode).toBe(200);
    expect(await native('web')).toEqual([]);
    expect((await native('api')).map((instance: { instanceId: string }) => instance.instanceId)).toEqual(['x']);
  });

  it('a register of ID x under a name leaves the /v1 instance x of another service alone (a Consul x under another name moves)', async () => {
    t = await createTestConsul();
    await nativeX('api');
    expect((await register(web({ ID: 'x' }))).statusCode).toBe(200);
    expect(await native('api')).toHaveLength(1);
    expect(await native('web')).toHaveLength(1);
    // The Consul-registered x moves to its new name, as Consul's IDs are unique on an agent.
    expect((await register(web({ ID: 'x', Name: 'shop' }))).statusCode).toBe(200);
    expect(await native('web')).toEqual([]);
    expect(await native('shop')).toHaveLength(1);
    expect(await native('api')).toHaveLength(1);
  });

  it('refuses (409) a deregister of an ID that only instances registered elsewhere have, in several services; acts on one alone', async () => {
    t = await createTestConsul();
    await nativeX('api');
    await nativeX('shop');
    const ambiguous = await t.app.inject({ method: 'PUT', url: '/v1/agent/service/deregister/x' });
    expect(ambiguous.statusCode).toBe(409);
    expect(ambiguous.body).toMatch(/several services \(api, shop\)/);
    expect(await native('api')).toHaveLength(1);
    expect(await native('shop')).toHaveLength(1);
    await t.native.inject({ method: 'DELETE', url: '/v1/services/shop/instances/x' });
    expect((await t.app.inject({ method: 'PUT', url: '/v1/agent/service/deregister/x' })).statusCode).toBe(200);
    expect(await native('api')).toEqual([]);
  });
});

describe('check updates find their instance without a walk over the namespace', () => {
  it('an unknown check id answers 404 without reading any service view', async () => {
    t = await createTestConsul();
    for (let i = 0; i < 20; i++) await register(web({ Name: `svc-${i}`, ID: `id-${i}`, Check: { TTL: '30s', Status: 'passing' } }));
    const reads = [vi.spyOn(t.node.views, 'get'), vi.spyOn(t.node.views, 'servicesOf'), vi.spyOn(t.node.views, 'stable')];
    for (const url of ['/v1/agent/check/pass/nope', '/v1/agent/check/fail/service:nope', '/v1/agent/check/warn/service:id-1:7']) {
      const answer = await t.app.inject({ method: 'PUT', url });
      expect(answer.statusCode, url).toBe(404);
      expect(answer.body).toMatch(/^Unknown check ID/);
    }
    expect((await t.app.inject({ method: 'PUT', url: '/v1/agent/check/update/nope', payload: { Status: 'passing' } })).statusCode).toBe(404);
    for (const spy of reads) expect(spy).not.toHaveBeenCalled();
    // A known one, custom or default, is found the same way.
    expect((await t.app.inject({ method: 'PUT', url: '/v1/agent/check/fail/service:id-7' })).statusCode).toBe(200);
    for (const spy of reads) expect(spy).not.toHaveBeenCalled();
  });
});

describe('what the Consul API stores is bounded as /v1 input is', () => {
  it('refuses tags past the extension bound (64 tags of 250 characters were 112 KB a record), and Meta past /v1 limits', async () => {
    t = await createTestConsul();
    const tags = Array.from({ length: 64 }, (_, i) => `${i}-${'t'.repeat(250)}`);
    const refused = await register(web({ Tags: tags }));
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toMatch(/^Tags, Checks: .* over the 8192/);
    const meta = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v']));
    expect((await register(web({ Meta: meta }))).statusCode).toBe(400);
    expect(await native()).toEqual([]);
  });

  it('a pass with a new note on a passing check renews the lease and writes nothing (no replicated record per note)', async () => {
    t = await createTestConsul();
    await register(web({ Check: { TTL: '30s', Status: 'passing' } }));
    const key = { namespace: 'default', service: 'web', instanceId: 'web-1' };
    const version = t.node.registry.find(key)!.record.version;
    for (let i = 0; i < 5; i++) expect((await t.app.inject({ method: 'PUT', url: `/v1/agent/check/pass/service:web-1?note=load-${i}` })).statusCode).toBe(200);
    expect(t.node.registry.find(key)!.record.version).toBe(version);
    // A change of status is written, with its output.
    await t.app.inject({ method: 'PUT', url: '/v1/agent/check/warn/service:web-1?note=slow' });
    expect(t.node.registry.find(key)!.record.version).not.toBe(version);
    expect((await t.app.inject({ url: '/v1/health/checks/web' })).json()[0]).toMatchObject({ Status: 'warning', Output: 'slow' });
  });
});
