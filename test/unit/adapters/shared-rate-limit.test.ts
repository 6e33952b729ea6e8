import { afterEach, describe, expect, it } from 'vitest';
import { createTestConsul, type TestConsul } from '../../support/consul.js';

let t: TestConsul | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('one rate limit for the whole peer (issue 33, finding 14)', () => {
  const token = 'reader-token-0123456789';
  const file = {
    limits: { rateLimitPerSecond: 1, rateLimitBurst: 4 },
    security: { tokens: [{ name: 'reader', token, namespaces: ['*'], scopes: ['read'] }] },
  };

  it('counts a token in one bucket on /v1 and on the Consul API: no twice the rate by speaking two protocols', async () => {
    t = await createTestConsul({ file });
    const headers = { authorization: `Bearer ${token}` };
    for (let i = 0; i < 2; i++) expect((await t.native.inject({ url: '/v1/services', remoteAddress: '10.0.0.1', headers })).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) {
      expect((await t.app.inject({ url: '/v1/catalog/services', remoteAddress: '10.0.0.2', headers: { 'x-consul-token': token } })).statusCode).toBe(200);
    }
    // The burst of 4 is spent across both protocols.
    expect((await t.native.inject({ url: '/v1/services', remoteAddress: '10.0.0.1', headers })).statusCode).toBe(429);
    const consul = await t.app.inject({ url: '/v1/catalog/services', remoteAddress: '10.0.0.2', headers: { 'x-consul-token': token } });
    expect(consul.statusCode).toBe(429);
    expect(consul.body).toMatch(/too many requests from token reader/);
    // One bucket, in the peer's one table: the token's, spent whole.
    expect(t.node.ports.limits.rates.heaviest(5).filter((bucket) => bucket.client === 'token:reader')).toEqual([{ client: 'token:reader', used: 1 }]);
  });

  it('counts an address without a token in one bucket on both too', async () => {
    t = await createTestConsul({ file: { limits: file.limits } });
    for (let i = 0; i < 2; i++) expect((await t.native.inject({ url: '/healthz', remoteAddress: '10.0.0.7' })).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) expect((await t.app.inject({ url: '/v1/status/leader', remoteAddress: '10.0.0.7' })).statusCode).toBe(200);
    expect((await t.app.inject({ url: '/v1/status/leader', remoteAddress: '10.0.0.7' })).statusCode).toBe(429);
    expect((await t.native.inject({ url: '/v1/services', remoteAddress: '10.0.0.7' })).statusCode).toBe(429);
  });
});
