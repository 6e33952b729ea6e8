import { afterEach, describe, expect, it } from 'vitest';
import { createTestConsul, type TestConsul } from '../../support/consul.js';
import { settle } from '../../support/fake-clock.js';

let t: TestConsul;
afterEach(async () => t?.close());

const WRITER = 'writer-token-0123456789';
const READER = 'reader-token-0123456789';
const TEAM = 'team-a-token-0123456789';
const file = {
  security: {
    tokens: [
      { name: 'writer', token: WRITER, namespaces: ['*'], scopes: ['write'] },
      { name: 'reader', token: READER, namespaces: ['default'], scopes: ['read'] },
      { name: 'team', token: TEAM, namespaces: ['team-a'], scopes: ['write'] },
    ],
  },
  consul: { namespaces: ['default', 'team-a'] },
};
const body = { Name: 'web', ID: 'web-1', Address: '10.0.0.1', Port: 80 };
const register = (headers: Record<string, string>, url = '/v1/agent/service/register') => t.app.inject({ method: 'PUT', url, headers, payload: body });

describe('Consul tokens map to our tokens, scopes and namespaces', () => {
  it('takes X-Consul-Token, Authorization: Bearer and ?token=', async () => {
    t = await createTestConsul({ file });
    expect((await register({ 'x-consul-token': WRITER })).statusCode).toBe(200);
    expect((await register({ authorization: `Bearer ${WRITER}` })).statusCode).toBe(200);
    expect((await register({}, `/v1/agent/service/register?token=${WRITER}`)).statusCode).toBe(200);
  });

  it("answers Consul's 403s: no token, an unknown token (ACL not found), a missing scope", async () => {
    t = await createTestConsul({ file });
    const none = await register({});
    expect(none.statusCode).toBe(403);
    expect(none.body).toMatch(/^Permission denied/);
    const unknown = await register({ 'x-consul-token': 'nobody-knows-this-token' });
    expect([unknown.statusCode, unknown.body]).toEqual([403, 'ACL not found']);
    const reader = await register({ 'x-consul-token': READER });
    expect(reader.statusCode).toBe(403);
    expect(reader.body).toMatch(/does not have the write scope/);
    expect(t.node.store.size).toBe(0);
    expect((await t.app.inject({ url: '/v1/health/service/web', headers: { 'x-consul-token': READER } })).statusCode).toBe(200);
  });

  it('maps ?ns= (or X-Consul-Namespace) to a namespace the token must hold; the first configured one by default', async () => {
    t = await createTestConsul({ file });
    expect((await register({ 'x-consul-token': TEAM })).statusCode).toBe(403);
    expect((await register({ 'x-consul-token': TEAM }, '/v1/agent/service/register?ns=team-a')).statusCode).toBe(200);
    expect((await register({ 'x-consul-token': TEAM, 'x-consul-namespace': 'team-a' })).statusCode).toBe(200);
    expect(t.node.registry.find({ namespace: 'team-a', service: 'web', instanceId: 'web-1' })).toBeDefined();
    expect(t.node.registry.find({ namespace: 'default', service: 'web', instanceId: 'web-1' })).toBeUndefined();
    const other = await register({ 'x-consul-token': WRITER }, '/v1/agent/service/register?ns=elsewhere');
    expect(other.statusCode).toBe(400);
    expect(other.body).toMatch(/^ns: namespace "elsewhere" is not served/);
    const read = await t.app.inject({ url: '/v1/catalog/services?ns=team-a', headers: { 'x-consul-token': READER } });
    expect(read.statusCode).toBe(403);
  });

  it('keeps status/leader and status/peers open to any client, as Consul does', async () => {
    t = await createTestConsul({ file });
    expect((await t.app.inject({ url: '/v1/status/leader' })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/v1/agent/self' })).statusCode).toBe(403);
  });
});

describe('blocking queries are shared per principal', () => {
  it('one token holding its share of consul.blockingQueriesMax leaves room for another token', async () => {
    t = await createTestConsul({ file: { ...file, consul: { ...file.consul, blockingQueriesMax: 4 }, limits: { rateLimitPerSecond: 0, heldSharePerPrincipalRatio: 0.5 } } });
    const writer = { 'x-consul-token': WRITER };
    expect((await register(writer)).statusCode).toBe(200);
    const index = (await t.app.inject({ url: '/v1/health/service/web', headers: writer })).headers['x-consul-index'];
    const block = (headers: Record<string, string>) => t.app.inject({ url: `/v1/health/service/web?index=${index}&wait=1m`, headers });
    const held = [block(writer), block(writer)];
    await settle();
    expect(t.blocking.size).toBe(2);
    const refused = await block(writer);
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toMatch(/token writer already holds 2 consul blocking queries.*limits\.heldSharePerPrincipalRatio/);
    // Another principal still gets its own.
    const other = block({ 'x-consul-token': READER });
    await settle();
    expect(t.blocking.size).toBe(3);
    expect(t.blocking.heldBy('token:reader')).toBe(1);
    await register(writer); // the same body again: no change, nothing wakes
    expect(t.blocking.size).toBe(3);
    await t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', headers: writer, payload: { ...body, Port: 81 } });
    await Promise.all([...held, other]);
    expect(t.blocking.size).toBe(0);
  });
});
