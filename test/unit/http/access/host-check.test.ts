import { afterEach, describe, expect, it } from 'vitest';
import { allowedHostsOf, HostCheck, hostAllowed, hostNameOf } from '../../../../src/http/access/host-check.js';
import { createTestConsul, type TestConsul } from '../../../support/consul.js';
import { testConfig } from '../../../support/node.js';
import { bearer, securedFile, TOKENS } from '../../../support/security.js';

describe('hostNameOf', () => {
  it.each([
    ['localhost:8761', 'localhost'],
    ['127.0.0.1:8761', '127.0.0.1'],
    ['[::1]:8761', '::1'],
    ['::1', '::1'],
    ['Evil.Example', 'evil.example'],
    ['evil.example:80', 'evil.example'],
  ])('%s -> %s', (header, name) => expect(hostNameOf(header)).toBe(name));
});

describe('allowedHostsOf / hostAllowed (pure)', () => {
  const dev = allowedHostsOf(testConfig({ peers: [{ id: 'peer-a', url: 'http://127.0.0.1:8761' }, { id: 'peer-b', url: 'http://devbox.internal:8762' }] }, { id: 'peer-a' }))!;

  it.each([
    ['localhost:8761', true],
    ['app.localhost:8761', true],
    ['127.0.0.1:8761', true],
    ['127.9.9.9', true],
    ['[::1]:8761', true],
    ['devbox.internal:8762', true],
    [undefined, true],
    ['evil.example', false],
    ['evil.example:8761', false],
    ['10.0.0.1:8761', false],
    ['localhost.evil.example', false],
  ] as const)('a dev peer on loopback: Host %s -> %s', (header, expected) => {
    expect(hostAllowed(dev, header)).toBe(expected);
  });

  it('remembers allowed Host values as sent, never refused ones, and at most 64', () => {
    const check = new HostCheck(dev);
    expect([check.allows('evil.example'), check.allows('evil.example'), check.allows('localhost:8761')]).toEqual([false, false, true]);
    for (let port = 0; port < 100; port++) expect(check.allows(`127.0.0.1:${port}`)).toBe(true);
    expect((check as unknown as { seen: Set<string> }).seen.size).toBe(64);
    expect(check.allows('evil.example')).toBe(false);
  });

  it('is off with tokens configured, and for a peer on a network address', () => {
    expect(allowedHostsOf(testConfig(securedFile()))).toBeNull();
    expect(allowedHostsOf(testConfig({}, { host: '0.0.0.0' }))).toBeNull();
    expect(allowedHostsOf(testConfig({}, { host: '10.1.2.3' }))).toBeNull();
    expect(allowedHostsOf(testConfig({}, { host: 'localhost' }))).not.toBeNull();
  });
});

describe('the Host check on the HTTP app and the Consul app (DNS rebinding against a dev peer)', () => {
  let t: TestConsul | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('refuses a request for another host with 403 REG_ERR_HOST_NOT_ALLOWED, before it changes anything', async () => {
    t = await createTestConsul();
    const evil = { host: 'rebound.evil.example' };
    const body = { service: 'orders', host: '10.0.0.1', port: 80 };
    const refused = await t.native.inject({ method: 'POST', url: '/v1/instances', headers: evil, payload: body });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'REG_ERR_HOST_NOT_ALLOWED', message: expect.stringMatching(/Host rebound\.evil\.example.*DNS rebinding.*127\.0\.0\.1/) });
    // The discover shortcut (before fastify) refuses it too.
    expect((await t.native.inject({ url: '/v1/services/orders', headers: evil })).statusCode).toBe(403);
    expect((await t.native.inject({ url: '/eureka/v2/apps', headers: evil })).statusCode).toBe(403);
    expect(t.node.store.size).toBe(0);
    const consul = await t.app.inject({ method: 'PUT', url: '/v1/agent/service/register', headers: evil, payload: { Name: 'orders', Port: 80 } });
    expect(consul.statusCode).toBe(403);
    expect(consul.body).toMatch(/^REG_ERR_HOST_NOT_ALLOWED: Host rebound\.evil\.example/);
    expect(t.node.store.size).toBe(0);
    // Its own names are served.
    for (const host of ['localhost:8761', '127.0.0.1:8761', '[::1]:8761']) {
      expect((await t.native.inject({ method: 'POST', url: '/v1/instances', headers: { host }, payload: body })).statusCode).toBeLessThan(300);
      expect((await t.app.inject({ url: '/v1/agent/services', headers: { host } })).statusCode).toBe(200);
    }
  });

  it('does not apply to a peer with tokens (a web page has none)', async () => {
    t = await createTestConsul({ file: securedFile() });
    const answer = await t.native.inject({ url: '/v1/services?namespace=team-a', headers: { host: 'registry.example', ...bearer(TOKENS.reader) } });
    expect(answer.statusCode).toBe(200);
  });
});
