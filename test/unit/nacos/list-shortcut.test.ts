import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject, type InjectOptions, type Response } from 'light-my-request';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestNacos, form, type TestNacos } from '../../support/nacos.js';

/**
 * The Nacos list shortcut (src/nacos/list-shortcut.ts) behind the Nacos app's front door: a
 * request through the server's own request listener gets the answer fastify gives
 * (`app.inject` goes straight to fastify), whether the shortcut took it or handed it on; the
 * shortcut refuses nothing itself, makes the Host check, the admission and the readiness gate
 * before answering, and a request is counted once against the rate limit either way.
 */

const BASE = '/nacos/v1/ns';
const LIST = `${BASE}/instance/list?serviceName=DEFAULT_GROUP%40%40web`;
const WRITER = 'writer-token-0123456789';
const READER = 'reader-token-0123456789';
const TOKENS = {
  security: {
    tokens: [
      { name: 'writer', token: WRITER, namespaces: ['*'], scopes: ['write'] },
      { name: 'reader', token: READER, namespaces: ['default'], scopes: ['read'] },
    ],
  },
};

interface Door {
  t: TestNacos;
  /** URLs of the door's requests that fastify answered (the shortcut handed the request on, or was never asked). */
  fastifySaw: string[];
  /** Through the server's request listener, as a socket's request arrives. */
  door(options: InjectOptions): Promise<Response>;
}

let t: TestNacos | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function openDoor(file: Record<string, unknown> = {}): Promise<Door> {
  t = await createTestNacos({ file });
  const fastifySaw: string[] = [];
  // onResponse: fastify answers a refused Host in an onRequest hook, before any later one runs.
  t.app.addHook('onResponse', (request, _reply, done) => {
    if (request.headers['x-through-door'] === '1') fastifySaw.push(request.url);
    done();
  });
  await t.app.ready();
  const [listener] = t.app.server.listeners('request') as ((raw: IncomingMessage, res: ServerResponse) => void)[];
  return { t, fastifySaw, door: (options) => inject(listener!, { ...options, headers: { ...(options.headers as Record<string, string>), 'x-through-door': '1' } }) };
}

const register = (door: Door, fields: Record<string, string>) => door.t.app.inject({ method: 'POST', url: `${BASE}/instance`, ...form({ serviceName: 'DEFAULT_GROUP@@web', port: '8080', ...fields }) });

/** What a client sees of an answer: status, content type, body and Retry-After. */
const seen = (response: Response) => ({ status: response.statusCode, type: response.headers['content-type'], body: response.body, retryAfter: response.headers['retry-after'] });

describe('Nacos list shortcut', () => {
  it('answers a plain list before fastify with the bytes fastify answers, recorded in the same metric', async () => {
    const d = await openDoor();
    await register(d, { ip: '10.0.0.1', metadata: JSON.stringify({ v: '1' }) });
    const shortcut = await d.door({ url: LIST });
    expect(d.fastifySaw).toEqual([]);
    const routed = await d.t.app.inject({ url: LIST });
    expect(seen(shortcut)).toEqual(seen(routed));
    expect(shortcut.statusCode).toBe(200);
    expect((shortcut.json() as { hosts: { ip: string }[] }).hosts.map((host) => host.ip)).toEqual(['10.0.0.1']);
    // One through the shortcut, one through fastify.
    expect(d.t.metrics.operation('instance.list').count('ok')).toBe(2);
  });

  it('answers a list after a change with the change (the cached bytes are the view of the change before)', async () => {
    const d = await openDoor();
    await register(d, { ip: '10.0.0.1' });
    const before = (await d.door({ url: LIST })).json() as { hosts: unknown[]; lastRefTime: number };
    expect((await d.door({ url: LIST })).json()).toEqual(before);
    await d.t.clock.advance(10);
    await register(d, { ip: '10.0.0.2' });
    const after = (await d.door({ url: LIST })).json() as { hosts: { ip: string }[]; lastRefTime: number };
    expect(after.hosts.map((host) => host.ip)).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(after.lastRefTime).toBeGreaterThan(before.lastRefTime);
    await d.t.app.inject({ method: 'DELETE', url: `${BASE}/instance?serviceName=DEFAULT_GROUP%40%40web&ip=10.0.0.1&port=8080` });
    expect(((await d.door({ url: LIST })).json() as { hosts: { ip: string }[] }).hosts.map((host) => host.ip)).toEqual(['10.0.0.2']);
    expect(d.fastifySaw).toEqual([]);
  });

  it('hands a request without a valid token, or with one of another namespace, to fastify: the same 401 and 403', async () => {
    const d = await openDoor(TOKENS);
    const cases = [LIST, `${LIST}&accessToken=not-a-token-0123456789`, `${LIST}&namespaceId=other&accessToken=${READER}`];
    for (const url of cases) {
      const through = await d.door({ url });
      expect(seen(through)).toEqual(seen(await d.t.app.inject({ url })));
    }
    expect(d.fastifySaw).toEqual(cases);
    expect(seen(await d.door({ url: cases[0]! })).status).toBe(401);
    expect((await d.door({ url: cases[2]! })).json()).toMatchObject({ code: 'REG_ERR_FORBIDDEN' });
    // With the token (query or bearer) the shortcut answers.
    expect((await d.door({ url: `${LIST}&accessToken=${READER}` })).statusCode).toBe(200);
    expect((await d.door({ url: LIST, headers: { authorization: `Bearer ${READER}` } })).statusCode).toBe(200);
    expect(d.fastifySaw).toHaveLength(5);
  });

  it('counts each request once against the rate limit, answered before fastify or handed on', async () => {
    const d = await openDoor({ limits: { rateLimitPerSecond: 1, rateLimitBurst: 3 } });
    // A bad parameter: admitted (counted) by the shortcut, handed on, answered 400 by the route.
    const bad = await d.door({ url: `${LIST}&healthyOnly=perhaps`, remoteAddress: '10.0.0.9' });
    expect([bad.statusCode, bad.json().code]).toEqual([400, 'REG_ERR_VALIDATION']);
    expect((await d.door({ url: LIST, remoteAddress: '10.0.0.9' })).statusCode).toBe(200);
    expect((await d.door({ url: LIST, remoteAddress: '10.0.0.9' })).statusCode).toBe(200);
    const limited = await d.door({ url: LIST, remoteAddress: '10.0.0.9' });
    expect([limited.statusCode, limited.json().code, limited.headers['retry-after']]).toEqual([429, 'REG_ERR_RATE_LIMITED', '1']);
    expect(d.t.metrics.operation('instance.list').count('limited')).toBe(1);
    expect(d.fastifySaw).toHaveLength(2);
    // Another address has its own bucket.
    expect((await d.door({ url: LIST, remoteAddress: '10.0.0.10' })).statusCode).toBe(200);
  });

  it('hands a list to fastify while the peer is not ready: the same 503, counted once against the rate limit', async () => {
    const d = await openDoor({ limits: { rateLimitPerSecond: 1, rateLimitBurst: 2 } });
    await register(d, { ip: '10.0.0.1' });
    const ready = vi.spyOn(d.t.node, 'ready', 'get').mockReturnValue(false);
    const starting = await d.door({ url: LIST, remoteAddress: '10.0.0.9' });
    const direct = await d.t.app.inject({ url: LIST, remoteAddress: '10.0.0.8' });
    expect(seen(starting)).toEqual(seen(direct));
    expect([starting.statusCode, starting.json().code]).toEqual([503, 'REG_ERR_NOT_READY']);
    expect(d.fastifySaw).toEqual([LIST]);
    ready.mockRestore();
    // The refused request took one of the address's two: one more is answered, the next refused.
    expect((await d.door({ url: LIST, remoteAddress: '10.0.0.9' })).statusCode).toBe(200);
    expect((await d.door({ url: LIST, remoteAddress: '10.0.0.9' })).statusCode).toBe(429);
  });

  it('hands a Host that does not name a dev peer to fastify, which refuses it before counting it', async () => {
    const d = await openDoor({ limits: { rateLimitPerSecond: 1, rateLimitBurst: 1 } });
    const evil = await d.door({ url: LIST, headers: { host: 'evil.example:8848' } });
    expect([evil.statusCode, evil.json().code]).toEqual([403, 'REG_ERR_HOST_NOT_ALLOWED']);
    expect(d.fastifySaw).toEqual([LIST]);
    expect((await d.door({ url: LIST, headers: { host: '127.0.0.1:8848' } })).statusCode).toBe(200);
    expect(d.fastifySaw).toHaveLength(1);
  });

  it('subscribes a udpPort to pushes from the address the request came from, and leaves other forms to fastify', async () => {
    const d = await openDoor();
    await register(d, { ip: '10.0.0.1' });
    expect((await d.door({ url: `${LIST}&udpPort=40001&clientIP=192.0.2.99`, remoteAddress: '::ffff:127.0.0.7' })).statusCode).toBe(200);
    expect(d.fastifySaw).toEqual([]);
    await register(d, { ip: '10.0.0.2' });
    await d.t.clock.advance(0);
    expect(d.t.socket.sent.map((push) => `${push.address}:${push.port}`)).toEqual(['127.0.0.7:40001']);
    // Another method, a longer path, a body: fastify's.
    await d.door({ method: 'POST', url: LIST });
    await d.door({ url: `${BASE}/instance/list/extra?serviceName=web` });
    await d.door({ url: LIST, method: 'GET', payload: 'x=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(d.fastifySaw).toHaveLength(3);
  });
});
