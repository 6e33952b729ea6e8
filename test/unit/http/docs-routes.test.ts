import { afterEach, describe, expect, it } from 'vitest';
import { EUREKA_PREFIXES } from '../../../src/eureka/routes.js';
import { routeDocFor } from '../../../src/http/openapi/route-docs.js';
import { buildServer } from '../../../src/http/server.js';
import { createTestNode } from '../../support/node.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

/** The OpenAPI path of a fastify route: `/v1/services/:service` -> `/v1/services/{service}`. */
const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

describe('OpenAPI description', () => {
  it('documents every route of the API, the Eureka API under both prefixes included', async () => {
    const { node } = await createTestNode({ start: false });
    const routes: [string, string][] = [];
    const app = await buildServer({ node, onRoute: (method, url) => routes.push([method, url]) });
    await app.ready();
    try {
      const spec = (await app.inject({ url: '/docs/json' })).json();
      expect(spec.openapi).toBe('3.1.0');
      expect(spec.info.title).toBe('peer-registry');
      const apiRoutes = routes.filter(([, url]) => !url.startsWith('/docs'));
      expect(apiRoutes.length).toBeGreaterThan(40);
      for (const [method, url] of apiRoutes) {
        expect(routeDocFor(method, url), `${method} ${url} has no route definition with docs`).toBeDefined();
        const operation = spec.paths[openApiPath(url)]?.[method.toLowerCase()];
        expect(operation, `${method} ${url} missing from /docs/json`).toBeDefined();
        expect(operation.summary.length).toBeGreaterThan(5);
        expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
      }
      for (const prefix of EUREKA_PREFIXES) {
        expect(spec.paths[`${prefix}/apps/{app}`].post.tags).toEqual([`Eureka ${prefix}`]);
        expect(spec.paths[`${prefix}/apps/{app}/{id}`].put.summary).toContain('Heartbeat');
      }
      const register = spec.paths['/v1/instances'].post;
      expect(register.requestBody.content['application/json'].schema.required).toEqual(['service', 'host', 'port']);
      expect(Object.keys(register.responses)).toEqual(expect.arrayContaining(['200', '201', '400', '413', '415']));
      // The same description as YAML.
      const yaml = await app.inject({ url: '/docs/yaml' });
      expect(yaml.statusCode).toBe(200);
      expect(yaml.body).toContain('/v1/services/{service}/instances/{id}/heartbeat:');
    } finally {
      await app.close();
    }
  });

  it('serves a browsable page whose assets all come from this peer', async () => {
    server = await createTestServer();
    const page = await server.app.inject({ url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const sources = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(sources.length).toBeGreaterThan(2);
    for (const source of sources) {
      expect(source, 'an asset from another host').not.toMatch(/^(https?:)?\/\//);
      const asset = await server.app.inject({ url: new URL(source, 'http://peer/docs/').pathname });
      expect(asset.statusCode, source).toBe(200);
    }
    const init = await server.app.inject({ url: '/docs/static/swagger-initializer.js' });
    expect(init.body).toContain('"validatorUrl":null');
  });
});

describe('route schemas are documentation only', () => {
  const register = (payload: unknown, headers: Record<string, string> = {}) =>
    server!.app.inject({ method: 'POST', url: '/v1/instances', payload: payload as string, headers });

  it('leaves validation, its codes and its messages to the domain validator', async () => {
    server = await createTestServer();
    let response = await register({ service: 'orders', host: '10.0.0.5', port: 8080, bogus: 1 });
    expect(response.json()).toEqual({ code: 'REG_ERR_VALIDATION', message: 'bogus: is not a known field' });
    response = await register({ service: 'orders', host: '10.0.0.5', port: '8080' });
    expect(response.json()).toEqual({ code: 'REG_ERR_VALIDATION', message: 'port: must be an integer' });
    response = await register({ service: 'orders', host: '10.0.0.5' });
    expect(response.json()).toEqual({ code: 'REG_ERR_VALIDATION', message: 'port: is required' });
    response = await register('hello', { 'content-type': 'text/plain' });
    expect(response.statusCode).toBe(415);
    response = await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/x/status', payload: { status: 'up' } });
    expect(response.json()).toEqual({ code: 'REG_ERR_VALIDATION', message: 'status: must be one of UP, DOWN, STARTING, OUT_OF_SERVICE' });
    response = await server.app.inject({ url: '/v1/services/orders?status=some' });
    expect(response.json()).toEqual({ code: 'REG_ERR_VALIDATION', message: 'status: must be "all" or "up"' });
  });

  it('serializes answers as before: every field kept, none coerced', async () => {
    server = await createTestServer();
    const created = await register({ service: 'orders', host: '10.0.0.5', port: 8080, metadata: { a: 'b' } });
    expect(created.statusCode).toBe(201);
    const body = created.json();
    expect(Object.keys(body).sort()).toEqual(
      [
        'namespace', 'service', 'group', 'instanceId', 'host', 'port', 'securePort', 'status', 'weight', 'zone', 'region', 'metadata', 'owner', 'version',
        'leaseDurationMs', 'leaseExpiresInMs', 'leaseLive', 'evictionHeld', 'registeredAtMs', 'lastUpdatedAtMs', 'heartbeatIntervalMs',
      ].sort(),
    );
    const cluster = (await server.app.inject({ url: '/v1/cluster' })).json();
    // Fields the schema leaves out are still there.
    expect(cluster.self).toHaveProperty('digest');
    expect(cluster.inbound).toHaveProperty('delayMs');
  });
});
