import { afterEach, describe, expect, it } from 'vitest';
import { createTestNacos, form, type TestNacos } from '../../support/nacos.js';

let t: TestNacos;
afterEach(async () => t?.close());

const BASE = '/nacos/v1/ns';
const register = (fields: Record<string, string>) => t.app.inject({ method: 'POST', url: `${BASE}/instance`, ...form(fields) });
const list = async (query: string) => {
  const response = await t.app.inject({ url: `${BASE}/instance/list?${query}` });
  expect(response.statusCode).toBe(200);
  return response.json() as { name: string; groupName: string; clusters: string; cacheMillis: number; lastRefTime: number; checksum: string; hosts: Record<string, unknown>[] };
};
const web = { serviceName: 'DEFAULT_GROUP@@web', ip: '10.0.0.1', port: '8080', weight: '2.5', metadata: JSON.stringify({ version: 'v1' }), ephemeral: 'true' };

describe('Nacos v1 instance routes', () => {
  it('registers from form fields (or the query string) and lists the instance in Nacos shapes', async () => {
    t = await createTestNacos();
    const created = await register(web);
    expect([created.statusCode, created.body]).toEqual([200, 'ok']);
    const asQuery = await t.app.inject({ method: 'POST', url: `${BASE}/instance?serviceName=web&ip=10.0.0.2&port=8080&clusterName=c1` });
    expect(asQuery.body).toBe('ok');
    const service = await list('serviceName=DEFAULT_GROUP%40%40web&clusters=');
    expect(service).toMatchObject({ name: 'DEFAULT_GROUP@@web', groupName: 'DEFAULT_GROUP', clusters: '', cacheMillis: 10_000 });
    expect(service.hosts).toHaveLength(2);
    expect(service.hosts[0]).toMatchObject({
      ip: '10.0.0.1',
      port: 8080,
      weight: 2.5,
      healthy: true,
      enabled: true,
      ephemeral: true,
      clusterName: 'DEFAULT',
      serviceName: 'DEFAULT_GROUP@@web',
      metadata: { version: 'v1' },
    });
    expect(service.hosts[1]).toMatchObject({ ip: '10.0.0.2', clusterName: 'c1' });
    // clusters filters by cluster (our zone); the same record is the native API's.
    expect((await list('serviceName=web&clusters=c1')).hosts.map((host) => host.ip)).toEqual(['10.0.0.2']);
    const native = (await t.native.inject({ url: '/v1/services/web?status=all' })).json() as { instances: { instanceId: string; zone: string; weight: number; metadata: unknown }[] };
    expect(native.instances.map((item) => [item.instanceId, item.zone, item.weight])).toEqual([
      ['10.0.0.1:8080', '', 2.5],
      ['10.0.0.2:8080', 'c1', 1],
    ]);
    expect(native.instances[0]!.metadata).toEqual({ version: 'v1' });
  });

  it('maps enabled and healthy to our status, and healthyOnly lists the healthy ones', async () => {
    t = await createTestNacos();
    await register({ ...web, healthy: 'false' });
    await register({ ...web, ip: '10.0.0.3', enabled: 'false', healthy: 'false' });
    await register({ ...web, ip: '10.0.0.4' });
    const all = await list('serviceName=DEFAULT_GROUP%40%40web');
    expect(all.hosts.map((host) => [host.ip, host.healthy, host.enabled])).toEqual([
      ['10.0.0.1', false, true],
      ['10.0.0.3', false, false],
      ['10.0.0.4', true, true],
    ]);
    expect((await list('serviceName=DEFAULT_GROUP%40%40web&healthyOnly=true')).hosts.map((host) => host.ip)).toEqual(['10.0.0.4']);
    const native = (await t.native.inject({ url: '/v1/services/web?status=all' })).json() as { instances: { status: string }[] };
    expect(native.instances.map((item) => item.status)).toEqual(['DOWN', 'OUT_OF_SERVICE', 'UP']);
  });

  it('keeps groups apart: GROUP@@name and groupName, and namespaceId public is default', async () => {
    t = await createTestNacos({ file: { nacos: { namespaces: ['default', 'team-a'] } } });
    await register({ ...web, serviceName: 'g1@@web' });
    await register({ ...web, serviceName: 'web', groupName: 'g2', ip: '10.0.0.2', namespaceId: 'public' });
    await register({ ...web, namespaceId: 'team-a', ip: '10.0.0.9' });
    expect((await list('serviceName=g1%40%40web')).hosts.map((host) => host.ip)).toEqual(['10.0.0.1']);
    expect((await list('serviceName=web&groupName=g2')).hosts.map((host) => host.ip)).toEqual(['10.0.0.2']);
    expect((await list('serviceName=web')).hosts).toEqual([]);
    expect((await list('serviceName=web&namespaceId=team-a')).hosts.map((host) => host.ip)).toEqual(['10.0.0.9']);
    const services = await t.app.inject({ url: `${BASE}/service/list?pageNo=1&pageSize=10&groupName=g1` });
    expect(services.json()).toEqual({ count: 1, doms: ['web'] });
    const mismatch = await register({ ...web, serviceName: 'g1@@web', groupName: 'g2' });
    expect(mismatch.statusCode).toBe(400);
    expect(mismatch.json()).toMatchObject({ code: 'REG_ERR_VALIDATION', message: expect.stringMatching(/^groupName/) });
    const unknown = await t.app.inject({ url: `${BASE}/instance/list?serviceName=web&namespaceId=elsewhere` });
    expect([unknown.statusCode, unknown.json().code]).toEqual([400, 'REG_ERR_VALIDATION']);
  });

  it('refuses persistent instances and bad input with {code, message}, changing nothing', async () => {
    t = await createTestNacos();
    for (const fields of [
      { ...web, ephemeral: 'false' },
      { ...web, port: '70000' },
      { ...web, ip: 'not a host' },
      { ...web, metadata: '{"a":{"b":1}}' },
      { ...web, metadata: 'nope' },
      { ...web, weight: '-1' },
    ]) {
      const response = await register(fields);
      expect(response.statusCode).toBe(400);
      expect(response.json().code).toBe('REG_ERR_VALIDATION');
    }
    expect((await register({ ...web, ephemeral: 'false' })).json().message).toMatch(/^ephemeral: persistent instances/);
    expect(t.node.store.size).toBe(0);
  });

  it('beats: renews the lease and answers clientBeatInterval; a gone instance answers 20404, or comes back from its beat', async () => {
    t = await createTestNacos({ file: { cluster: { leaseDurationMs: 6_000, heartbeatIntervalMs: 2_000 } } });
    await register(web);
    const beat = () => t.app.inject({ method: 'PUT', url: `${BASE}/instance/beat?serviceName=DEFAULT_GROUP%40%40web&ip=10.0.0.1&port=8080` });
    for (let i = 0; i < 5; i++) {
      await t.clock.advance(2_000);
      expect((await beat()).json()).toEqual({ clientBeatInterval: 2_000, code: 10_200, lightBeatEnabled: true });
    }
    expect((await list('serviceName=DEFAULT_GROUP%40%40web')).hosts).toHaveLength(1);
    // No beats: the lease runs out and the reaper evicts it.
    await t.clock.advance(10_000);
    expect((await list('serviceName=DEFAULT_GROUP%40%40web')).hosts).toHaveLength(0);
    expect((await beat()).json()).toMatchObject({ code: 20_404 });
    // A 1.x client's beat carries the instance: it registers it again, as Nacos does.
    const withBody = { beat: JSON.stringify({ serviceName: 'DEFAULT_GROUP@@web', ip: '10.0.0.1', port: 8080, cluster: 'DEFAULT', weight: 3, metadata: { a: 'b' } }), serviceName: 'DEFAULT_GROUP@@web' };
    const back = await t.app.inject({ method: 'PUT', url: `${BASE}/instance/beat?${new URLSearchParams(withBody).toString()}` });
    expect(back.json()).toMatchObject({ code: 10_200 });
    expect((await list('serviceName=DEFAULT_GROUP%40%40web')).hosts).toMatchObject([{ ip: '10.0.0.1', weight: 3, metadata: { a: 'b' } }]);
  });

  it('takes the lease and beat interval from preserved.* metadata, within the cluster bounds', async () => {
    t = await createTestNacos();
    await register({ ...web, metadata: JSON.stringify({ 'preserved.ip.delete.timeout': '4000', 'preserved.heart.beat.interval': '1000' }) });
    const host = (await list('serviceName=DEFAULT_GROUP%40%40web')).hosts[0]!;
    expect([host.ipDeleteTimeout, host.instanceHeartBeatInterval]).toEqual([4_000, 1_000]);
    await t.clock.advance(6_000);
    expect((await list('serviceName=DEFAULT_GROUP%40%40web')).hosts).toHaveLength(0);
  });

  it('updates (PUT), reads one (GET) and deregisters (DELETE, ok even when already gone)', async () => {
    t = await createTestNacos();
    const missing = await t.app.inject({ method: 'PUT', url: `${BASE}/instance`, ...form(web) });
    expect([missing.statusCode, missing.json().code]).toEqual([404, 'REG_ERR_INSTANCE_NOT_FOUND']);
    await register(web);
    expect((await t.app.inject({ method: 'PUT', url: `${BASE}/instance`, ...form({ ...web, weight: '7' }) })).body).toBe('ok');
    const one = await t.app.inject({ url: `${BASE}/instance?serviceName=DEFAULT_GROUP%40%40web&ip=10.0.0.1&port=8080` });
    expect(one.json()).toMatchObject({ service: 'DEFAULT_GROUP@@web', ip: '10.0.0.1', port: 8080, weight: 7, healthy: true, clusterName: 'DEFAULT' });
    const query = 'serviceName=DEFAULT_GROUP%40%40web&ip=10.0.0.1&port=8080';
    expect((await t.app.inject({ method: 'DELETE', url: `${BASE}/instance?${query}` })).body).toBe('ok');
    expect((await t.app.inject({ url: `${BASE}/instance?${query}` })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: `${BASE}/instance?${query}` })).body).toBe('ok');
    expect((await list('serviceName=DEFAULT_GROUP%40%40web')).hosts).toEqual([]);
  });

  it('answers lists of one view from one encoding: the same bytes until the service changes', async () => {
    t = await createTestNacos();
    await register(web);
    const url = `${BASE}/instance/list?serviceName=DEFAULT_GROUP%40%40web`;
    const first = (await t.app.inject({ url })).body;
    await t.clock.advance(100);
    expect((await t.app.inject({ url })).body).toBe(first);
    const { reads } = t;
    expect(reads.hostsOf('default', 'web').listBody('DEFAULT_GROUP@@web', 'DEFAULT_GROUP', '', null, false)).toBe(reads.hostsOf('default', 'web').listBody('DEFAULT_GROUP@@web', 'DEFAULT_GROUP', '', null, false));
    await register({ ...web, ip: '10.0.0.2' });
    const after = JSON.parse((await t.app.inject({ url })).body) as { hosts: unknown[]; lastRefTime: number };
    expect(after.hosts).toHaveLength(2);
    expect(after.lastRefTime).toBeGreaterThan(JSON.parse(first).lastRefTime);
  });

  it('lists services in pages and answers operator/metrics', async () => {
    t = await createTestNacos();
    for (const name of ['a', 'b', 'c']) await register({ ...web, serviceName: name });
    expect((await t.app.inject({ url: `${BASE}/service/list?pageNo=2&pageSize=2` })).json()).toEqual({ count: 3, doms: ['c'] });
    const metrics = (await t.app.inject({ url: `${BASE}/operator/metrics` })).json();
    expect(metrics).toMatchObject({ status: 'UP', serviceCount: 3, instanceCount: 3 });
  });
});

describe('Nacos credentials', () => {
  const WRITER = 'writer-token-0123456789';
  const READER = 'reader-token-0123456789';
  const file = {
    security: {
      tokens: [
        { name: 'writer', token: WRITER, namespaces: ['*'], scopes: ['write'] },
        { name: 'reader', token: READER, namespaces: ['default'], scopes: ['read'] },
      ],
    },
  };

  it('logs in with a registry token as password, and takes accessToken, password or a bearer token', async () => {
    t = await createTestNacos({ file });
    const login = await t.app.inject({ method: 'POST', url: '/nacos/v1/auth/login', ...form({ username: 'writer', password: WRITER }) });
    expect(login.json()).toMatchObject({ accessToken: WRITER, tokenTtl: 18_000, username: 'writer' });
    const wrong = await t.app.inject({ method: 'POST', url: '/nacos/v1/auth/login', ...form({ username: 'writer', password: 'not-a-token-at-all' }) });
    // The contract's answer to a token that matches none: 401, as /v1 answers it.
    expect([wrong.statusCode, wrong.json().code]).toEqual([401, 'REG_ERR_UNAUTHORIZED']);
    expect(wrong.body).not.toContain('not-a-token-at-all');
    const none = await register(web);
    expect([none.statusCode, none.json().code]).toEqual([401, 'REG_ERR_UNAUTHORIZED']);
    expect((await register({ ...web, accessToken: WRITER })).body).toBe('ok');
    expect((await register({ ...web, username: 'writer', password: WRITER })).body).toBe('ok');
    const bearer = await t.app.inject({ method: 'POST', url: `${BASE}/instance`, payload: form(web).payload, headers: { ...form(web).headers, authorization: `Bearer ${WRITER}` } });
    expect(bearer.body).toBe('ok');
    const reader = await register({ ...web, accessToken: READER });
    expect([reader.statusCode, reader.json().code]).toEqual([403, 'REG_ERR_FORBIDDEN']);
    expect((await t.app.inject({ url: `${BASE}/instance/list?serviceName=web&accessToken=${READER}` })).statusCode).toBe(200);
  });
});

describe('Nacos rate limit', () => {
  it('is the peer-wide bucket of the contract: a token spent on /v1 is spent on Nacos (v1 and gRPC)', async () => {
    const token = 'writer-token-0123456789';
    t = await createTestNacos({
      file: { security: { tokens: [{ name: 'writer', token, namespaces: ['*'], scopes: ['write'] }] }, limits: { rateLimitPerSecond: 1, rateLimitBurst: 3 } },
    });
    for (let i = 0; i < 3; i += 1) {
      const native = await t.native.inject({ url: '/v1/services', headers: { authorization: `Bearer ${token}` }, remoteAddress: '10.0.0.1' });
      expect(native.statusCode).toBe(200);
    }
    const nacos = await t.app.inject({ url: `${BASE}/instance/list?serviceName=web&accessToken=${token}`, remoteAddress: '10.0.0.2' });
    expect([nacos.statusCode, nacos.json().code, nacos.headers['retry-after']]).toEqual([429, 'REG_ERR_RATE_LIMITED', '1']);
    expect(t.metrics.operation('instance.list').count('limited')).toBe(1);
  });
});

describe('Nacos request logs', () => {
  it('go through the contract logger and never carry a credential (login, ?accessToken=, ?password=)', async () => {
    const { recordingLogger } = await import('../../support/recording-logger.js');
    const { sampledLogger } = await import('../../../src/log/sampled.js');
    const { buildNacosApp } = await import('../../../src/nacos/app.js');
    const recording = recordingLogger();
    const secret = 'writer-token-0123456789';
    t = await createTestNacos({ file: { security: { tokens: [{ name: 'writer', token: secret, namespaces: ['*'], scopes: ['write'] }] } } });
    const { app } = await buildNacosApp({ node: t.node, logger: sampledLogger(recording, t.clock) });
    for (const password of [secret, `wrong-${secret}`]) {
      await app.inject({ method: 'POST', url: '/nacos/v1/auth/login', ...form({ username: 'writer', password }) });
      await app.inject({ method: 'POST', url: `/nacos/v1/auth/login?username=writer&password=${password}` });
      await app.inject({ method: 'POST', url: `${BASE}/instance?serviceName=web&ip=10.0.0.1&port=1&username=writer&password=${password}` });
      await app.inject({ url: `${BASE}/instance/list?serviceName=web&accessToken=${password}` });
      await app.inject({ method: 'DELETE', url: `${BASE}/instance?serviceName=web&ip=10.0.0.1&port=1&namespaceId=other&accessToken=${password}` });
    }
    await app.close();
    const text = recording.lines.map((line) => JSON.stringify(line)).join('\n');
    // The refusals were logged (the wrong password's), with their path and status...
    expect(recording.lines.filter((line) => line.msg === 'nacos request refused').map((line) => [line.fields.path, line.fields.statusCode])).toContainEqual(['/nacos/v1/ns/instance/list', 401]);
    expect(recording.lines.every((line) => line.fields.component === 'nacos')).toBe(true);
    // ...and no line carries the token, right or wrong.
    expect(text).not.toContain(secret);
  });
});

describe('Nacos on a dev peer listening on loopback', () => {
  it('answers only a Host that names it (DNS rebinding), and writes nothing for another', async () => {
    t = await createTestNacos();
    const form = 'serviceName=orders&ip=10.0.0.1&port=8080';
    const evil = await t.app.inject({ method: 'POST', url: `${BASE}/instance`, headers: { host: 'evil.example:8848', 'content-type': 'application/x-www-form-urlencoded' }, payload: form });
    expect(evil.statusCode).toBe(403);
    expect(evil.json()).toMatchObject({ code: 'REG_ERR_HOST_NOT_ALLOWED' });
    expect(t.node.registry.store.getService('default', 'orders')).toBeUndefined();
    const local = await t.app.inject({ method: 'POST', url: `${BASE}/instance`, headers: { host: '127.0.0.1:8848', 'content-type': 'application/x-www-form-urlencoded' }, payload: form });
    expect(local.statusCode).toBe(200);
  });
});

describe('Nacos lists of unknown services', () => {
  it('answer an empty list without keeping a view per name asked', async () => {
    t = await createTestNacos();
    const views = t.node.views as unknown as { stableViews: { cache: Map<string, Map<string, unknown>> } };
    for (let i = 0; i < 50; i++) {
      const answer = (await t.app.inject({ url: `${BASE}/instance/list?serviceName=nobody-${i}` })).json() as { hosts: unknown[]; name: string };
      expect([answer.name, answer.hosts]).toEqual([`DEFAULT_GROUP@@nobody-${i}`, []]);
    }
    expect(views.stableViews.cache.get('default')?.size ?? 0).toBe(0);
  });
});
