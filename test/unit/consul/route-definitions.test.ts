import { afterEach, describe, expect, it } from 'vitest';
import { CONSUL_ROUTE_LIST, CONSUL_ROUTES } from '../../../src/consul/route-definitions.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';

let t: TestConsul;
afterEach(async () => t?.close());

const body = { Name: 'web', ID: 'web-1', Address: '10.0.0.1', Port: 80 };
const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

describe('the Consul routes are registered from their definitions', () => {
  it('serves every definition, and each one states its access class and gating', async () => {
    t = await createTestConsul();
    for (const definition of CONSUL_ROUTE_LIST) {
      expect(t.app.hasRoute({ method: definition.method, url: definition.url }), `${definition.method} ${definition.url}`).toBe(true);
      expect(['public', 'read', 'write', 'admin']).toContain(definition.access);
    }
    // The open routes answer from this peer's own view: never gated; every registry route is.
    const ungated = CONSUL_ROUTE_LIST.filter((definition) => !definition.gatedUntilReady).map((definition) => definition.url);
    expect(ungated.sort()).toEqual(['/docs/json', '/v1/agent/self', '/v1/catalog/datacenters', '/v1/status/leader', '/v1/status/peers']);
  });

  it('describes every documented route in the listener\'s OpenAPI document, and not the document itself', async () => {
    t = await createTestConsul();
    const answer = await t.app.inject({ url: '/docs/json' });
    expect(answer.statusCode).toBe(200);
    const document = answer.json() as { openapi: string; paths: Record<string, Record<string, { summary?: string; responses: Record<string, unknown> }>> };
    expect(document.openapi).toBe('3.1.0');
    const documented = CONSUL_ROUTE_LIST.filter((definition) => definition.doc);
    expect(documented.length).toBe(CONSUL_ROUTE_LIST.length - 1);
    for (const definition of documented) {
      const operation = document.paths[openApiPath(definition.url)]?.[definition.method.toLowerCase()];
      expect(operation?.summary, `${definition.method} ${definition.url}`).toBe(definition.doc!.summary);
    }
    expect(document.paths['/docs/json']).toBeUndefined();
    expect(Object.keys(document.paths['/v1/agent/service/register']!.put!.responses)).toEqual(expect.arrayContaining(['200', '400', '403']));
  });

  it('keeps status/leader open, gives what tells about the cluster (peers, datacenters, the document) to the admin scope as /v1/cluster, and refuses the rest without a token', async () => {
    const READER = 'reader-token-0123456789';
    const ADMIN = 'admin-token-01234567890';
    t = await createTestConsul({
      file: {
        security: {
          tokens: [
            { name: 'reader', token: READER, namespaces: ['*'], scopes: ['read'] },
            { name: 'admin', token: ADMIN, namespaces: ['*'], scopes: ['admin'] },
          ],
        },
      },
    });
    expect((await t.app.inject({ url: '/v1/status/leader' })).statusCode).toBe(200);
    for (const url of ['/docs/json', '/v1/catalog/datacenters', '/v1/status/peers']) {
      for (const headers of [{}, { 'x-consul-token': READER }]) {
        const refused = await t.app.inject({ url, headers });
        expect(refused.statusCode, url).toBe(403);
        expect(refused.headers['content-type']).toMatch(/^text\/plain/);
      }
      expect((await t.app.inject({ url, headers: { 'x-consul-token': ADMIN } })).statusCode, url).toBe(200);
    }
    const refused = await t.app.inject({ url: '/v1/catalog/services' });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['content-type']).toMatch(/^text\/plain/);
  });

  it('refuses a route added without a definition (403, plain text), and never runs its handler', async () => {
    t = await createTestConsul();
    let ran = false;
    t.app.get('/v1/undeclared', async () => {
      ran = true;
      return 'ran';
    });
    const answer = await t.app.inject({ url: '/v1/undeclared' });
    expect(answer.statusCode).toBe(403);
    expect(answer.headers['content-type']).toMatch(/^text\/plain/);
    expect(answer.body).toMatch(/has no access policy/);
    expect(ran).toBe(false);
  });
});

describe('the Consul readiness gate', () => {
  it('answers 503 in plain text with Retry-After on the registry routes until the start-up sync is done; the status routes answer', async () => {
    t = await createTestConsul({ start: false });
    expect(t.node.ready).toBe(false);
    for (const request of [
      { method: 'PUT' as const, url: CONSUL_ROUTES.register.url, payload: body },
      { method: 'GET' as const, url: '/v1/health/service/web' },
      { method: 'GET' as const, url: '/v1/agent/services' },
    ]) {
      const answer = await t.app.inject(request);
      expect(answer.statusCode, request.url).toBe(503);
      expect(answer.headers['retry-after']).toBe('1');
      expect(answer.headers['content-type']).toMatch(/^text\/plain/);
      expect(answer.body).toMatch(/still starting.*try another peer/);
    }
    expect(t.node.store.size).toBe(0);
    expect((await t.app.inject({ url: '/v1/status/leader' })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/v1/agent/self' })).statusCode).toBe(200);
  });
});

describe('the Consul rate limit is /v1\'s policy', () => {
  const limits = { rateLimitPerSecond: 1, rateLimitBurst: 3 };
  const fromAddress = (remoteAddress: string, headers: Record<string, string> = {}) => t.app.inject({ url: '/v1/catalog/services', remoteAddress, headers });

  it('limits another host by its address: 429 in plain text, with /v1\'s message and Retry-After', async () => {
    t = await createTestConsul({ file: { limits } });
    for (let i = 0; i < 3; i++) expect((await fromAddress('10.0.0.7')).statusCode).toBe(200);
    const refused = await fromAddress('10.0.0.7');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^text\/plain/);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body).toMatch(/^too many requests from address 10\.0\.0\.7 .*limits\.rateLimitPerSecond/);
    // Another address has its own bucket; the open routes count too.
    expect((await fromAddress('10.0.0.8')).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/v1/status/leader', remoteAddress: '10.0.0.7' })).statusCode).toBe(429);
    await t.clock.advance(1_000);
    expect((await fromAddress('10.0.0.7')).statusCode).toBe(200);
  });

  it('exempts loopback callers unless limits.rateLimitLoopbackPerSecond is set, as on /v1', async () => {
    t = await createTestConsul({ file: { limits } });
    for (let i = 0; i < 10; i++) expect((await fromAddress('127.0.0.1')).statusCode).toBe(200);
    for (let i = 0; i < 10; i++) expect((await fromAddress('::1')).statusCode).toBe(200);
    await t.close();
    t = await createTestConsul({ file: { limits: { ...limits, rateLimitLoopbackPerSecond: 1 } } });
    for (let i = 0; i < 3; i++) expect((await fromAddress('127.0.0.1')).statusCode).toBe(200);
    const refused = await fromAddress('127.0.0.1');
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toMatch(/limits\.rateLimitLoopbackPerSecond/);
  });

  it('counts a valid token in its own bucket, whatever the address', async () => {
    const token = 'reader-token-0123456789';
    t = await createTestConsul({ file: { limits, security: { tokens: [{ name: 'reader', token, namespaces: ['*'], scopes: ['read'] }] } } });
    for (let i = 0; i < 3; i++) expect((await fromAddress(`10.0.1.${i}`, { 'x-consul-token': token })).statusCode).toBe(200);
    const refused = await fromAddress('10.0.1.9', { 'x-consul-token': token });
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toMatch(/^too many requests from token reader/);
    // Even from loopback: a token is limited one by one.
    expect((await fromAddress('127.0.0.1', { 'x-consul-token': token })).statusCode).toBe(429);
  });
});
