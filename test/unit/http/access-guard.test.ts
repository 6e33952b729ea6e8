import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCESS_POLICY, accessOf, type AccessClass } from '../../../src/http/access-policy.js';
import { buildServer } from '../../../src/http/server.js';
import { createTestNode, type TestNode } from '../../support/node.js';
import { basic, bearer, CLUSTER_SECRET, peerHeaders, securedFile, TOKENS } from '../../support/security.js';

/**
 * Every route the app registers, tried without credentials, with wrong ones, with the wrong
 * scope and the wrong namespace. The table is generated from the routes fastify reports, so
 * a new route is tried as soon as it exists; one without a policy entry fails here.
 */

async function routesOf(file: Record<string, unknown>): Promise<string[]> {
  const { node } = await createTestNode({ start: false, file });
  const routes: string[] = [];
  const app = await buildServer({ node, onRoute: (method, url) => routes.push(`${method} ${url}`) });
  await app.ready();
  await app.close();
  return routes;
}

const ROUTES = await routesOf(securedFile());
const route = (key: string) => key.split(' ') as [InjectOptions['method'] & string, string];

/** A value for every path parameter any route uses; a new parameter name fails loudly. */
const PARAMS: Record<string, string> = { service: 'orders', id: 'i-1', app: 'ORDERS', vip: 'orders', svip: 'orders', method: 'ping', file: 'app.js' };

function concrete(pattern: string): string {
  return pattern.replace(/:(\w+)/g, (_match, name: string) => {
    const value = PARAMS[name];
    if (value === undefined) throw new Error(`no test value for the path parameter :${name} (add one to PARAMS)`);
    return value;
  });
}

/** A plausible body for the routes that take one (a rejected request must not care). */
function bodyFor(method: string, pattern: string): unknown {
  if (method === 'GET' || method === 'DELETE') return undefined;
  if (pattern === '/v1/instances') return { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: 'i-1', namespace: 'team-a' };
  if (pattern.endsWith('/status') && pattern.startsWith('/v1/')) return { status: 'UP' };
  if (pattern.startsWith('/v1/admin/')) return { selfPreservation: 'auto' };
  if (pattern === '/v1/peer/:method') return { from: { id: 'peer-x', url: 'http://127.0.0.1:9999', region: 'r', zone: 'z' }, members: [] };
  return {};
}

function request(key: string, headers: Record<string, string> = {}): InjectOptions {
  const [method, pattern] = route(key);
  const body = bodyFor(method, pattern);
  const namespaced = pattern.startsWith('/v1/') && !pattern.startsWith('/v1/peer') && !pattern.startsWith('/v1/admin') && pattern !== '/v1/cluster';
  return {
    method,
    url: `${concrete(pattern)}${namespaced ? '?namespace=team-a' : ''}`,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  };
}

const CLIENT_CLASSES: AccessClass[] = ['read', 'write', 'admin', 'eureka-read', 'eureka-write'];
const byClass = (wanted: AccessClass[]) => ROUTES.filter((key) => wanted.includes(accessOf(...route(key))!));

/** A token that is valid but lacks the scope each client class needs. */
const WRONG_SCOPE: Record<string, string> = {
  read: TOKENS.admin,
  'eureka-read': TOKENS.admin,
  write: TOKENS.reader,
  'eureka-write': TOKENS.reader,
  admin: TOKENS.writer,
};
/** A token with the scope and the namespace each client class needs. */
const RIGHT: Record<string, string> = {
  read: TOKENS.reader,
  'eureka-read': TOKENS.reader,
  write: TOKENS.writer,
  'eureka-write': TOKENS.writer,
  admin: TOKENS.admin,
};

let server: TestNode & { app: FastifyInstance };

beforeAll(async () => {
  const testNode = await createTestNode({ file: securedFile() });
  const app = await buildServer({ node: testNode.node });
  await app.ready();
  server = { ...testNode, app };
});
afterAll(async () => server?.app.close());

/** Sends a request that must be refused with `status`, and checks that nothing changed. */
async function expectRefused(options: InjectOptions, status: number, code: string): Promise<Record<string, string | string[] | number | undefined>> {
  const revision = server.node.store.revision;
  const response = await server.app.inject(options);
  expect(response.statusCode, `${options.method} ${options.url}: ${response.body}`).toBe(status);
  expect(response.json().code).toBe(code);
  expect(server.node.store.revision, 'a refused request changed the store').toBe(revision);
  return response.headers;
}

describe('the access policy', () => {
  it('has an entry for every route, and no entry for a route that does not exist', () => {
    expect(ROUTES.length).toBeGreaterThan(30);
    const missing = ROUTES.filter((key) => accessOf(...route(key)) === undefined);
    expect(missing, 'routes without an access policy (add them to src/http/access-policy.ts)').toEqual([]);
    const stale = [...ACCESS_POLICY.keys()].filter((key) => !ROUTES.includes(key));
    expect(stale, 'policy entries for routes that do not exist').toEqual([]);
  });

  it('answers for every route the class its definition states, HEAD as its GET, and none for an unknown method or pattern', () => {
    for (const [key, access] of ACCESS_POLICY) {
      const [method, url] = route(key);
      expect(accessOf(method, url), key).toBe(access);
      if (method === 'GET') expect(accessOf('HEAD', url), `HEAD ${url}`).toBe(access);
    }
    expect(accessOf('PATCH', '/v1/instances')).toBeUndefined();
    expect(accessOf('GET', '/v1/no-such-route')).toBeUndefined();
  });

  it('keeps only the probes and the static files (dashboard, API description) public', () => {
    expect(byClass(['public']).sort()).toEqual([
      'GET /',
      'GET /docs',
      'GET /docs/json',
      'GET /docs/static/*',
      'GET /docs/static/index.html',
      'GET /docs/static/swagger-initializer.js',
      'GET /docs/yaml',
      'GET /healthz',
      'GET /readyz',
      'GET /ui/:file',
    ]);
    expect(byClass(['peer'])).toEqual(['POST /v1/peer/:method', 'POST /v1/peer/snapshot-stream']);
  });
});

describe.each(byClass(CLIENT_CLASSES))('%s', (key) => {
  const access = accessOf(...route(key))!;
  const eureka = access.startsWith('eureka');

  it('is refused without credentials (401, WWW-Authenticate), also as HEAD', async () => {
    const headers = await expectRefused(request(key), 401, 'REG_ERR_UNAUTHORIZED');
    expect(headers['www-authenticate']).toMatch(eureka ? /^Basic realm="registry"/ : /^Bearer realm="registry"/);
    if (route(key)[0] === 'GET') {
      const head = await server.app.inject({ ...request(key), method: 'HEAD' });
      expect(head.statusCode).toBe(401);
    }
  });

  it('is refused with a wrong token, with the cluster secret and with a malformed header (401)', async () => {
    await expectRefused(request(key, bearer('test-token-that-is-not-configured')), 401, 'REG_ERR_UNAUTHORIZED');
    await expectRefused(request(key, bearer(CLUSTER_SECRET)), 401, 'REG_ERR_UNAUTHORIZED');
    await expectRefused(request(key, basic(CLUSTER_SECRET)), 401, 'REG_ERR_UNAUTHORIZED');
    await expectRefused(request(key, { authorization: TOKENS.root }), 401, 'REG_ERR_UNAUTHORIZED');
    await expectRefused(request(key, { authorization: 'Bearer ' }), 401, 'REG_ERR_UNAUTHORIZED');
    // A signed peer request is no client credential.
    await expectRefused(request(key, peerHeaders('', { nowMs: server.clock.nowMs(), path: concrete(route(key)[1]) })), 401, 'REG_ERR_UNAUTHORIZED');
  });

  it('is refused with a valid token that lacks the scope (403)', async () => {
    await expectRefused(request(key, bearer(WRONG_SCOPE[access]!)), 403, 'REG_ERR_FORBIDDEN');
  });

  // Admin routes are not bound to a namespace.
  if (access !== 'admin') {
    it('is refused with a valid token for another namespace (403)', async () => {
      await expectRefused(request(key, bearer(TOKENS.otherTeam)), 403, 'REG_ERR_FORBIDDEN');
    });
  }

  it(`passes the guard with a ${eureka ? 'bearer or basic ' : ''}token that has the scope and the namespace`, async () => {
    // Watch streams and long polls end at once, so that inject returns.
    server.node.watch.closeAll();
    for (const headers of eureka ? [bearer(RIGHT[access]!), basic(RIGHT[access]!)] : [bearer(RIGHT[access]!), bearer(TOKENS.root)]) {
      const response = await server.app.inject(request(key, headers));
      expect([401, 403], `${key}: ${response.body}`).not.toContain(response.statusCode);
    }
  });
});

describe('POST /v1/peer/:method', () => {
  const key = 'POST /v1/peer/:method';

  it('refuses client tokens, the cluster secret as a token, and unsigned calls (401)', async () => {
    for (const headers of [{}, bearer(TOKENS.root), bearer(CLUSTER_SECRET), basic(TOKENS.root), bearer(TOKENS.admin)]) {
      await expectRefused(request(key, headers), 401, 'REG_ERR_UNAUTHORIZED');
    }
  });

  it('accepts a call signed with the cluster secret, and refuses one signed with another', async () => {
    const body = JSON.stringify(bodyFor('POST', '/v1/peer/:method'));
    const nowMs = server.clock.nowMs();
    const forged = { ...request(key, peerHeaders(body, { nowMs, secret: 'another-secret-of-sufficient-length-000' })), payload: body };
    await expectRefused(forged, 401, 'REG_ERR_UNAUTHORIZED');
    const signed = await server.app.inject({ ...request(key, peerHeaders(body, { nowMs })), payload: body });
    expect(signed.statusCode, signed.body).toBe(200);
  });
});

describe('public routes', () => {
  it.each(byClass(['public']))('%s answers without credentials, and with bad ones', async (key) => {
    for (const headers of [{}, bearer('nonsense-token-nonsense-token')]) {
      const response = await server.app.inject(request(key, headers));
      // Whatever the route answers (a page, a redirect, 404 for an unknown file), never a refusal.
      expect([401, 403]).not.toContain(response.statusCode);
    }
  });
});
