import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { patternOf, RouteMethods } from '../../../src/http/route-methods.js';
import { createTestServer, type TestServer } from '../../support/server.js';

/** Issue 17, point 6: 415, 413 and a wrong method say what to do. */
let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

describe('415', () => {
  it('names the content types the route takes (the common curl -d without a content type)', async () => {
    server = await createTestServer();
    const response = await server.app.inject({
      method: 'POST',
      url: '/v1/instances',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '{"service":"orders","host":"10.0.0.5","port":8080}',
    });
    expect(response.statusCode).toBe(415);
    expect(response.json()).toEqual({
      code: 'REG_ERR_UNSUPPORTED_MEDIA_TYPE',
      message: "content-type application/x-www-form-urlencoded is not taken here: send the body as application/json; with curl -d, add -H 'content-type: application/json'",
    });
    expect(server.node.store.size).toBe(0);
  });

  it('on the Eureka API, names JSON and XML', async () => {
    server = await createTestServer();
    const response = await server.app.inject({ method: 'POST', url: '/eureka/apps/orders', headers: { 'content-type': 'text/plain' }, payload: 'app=orders' });
    expect(response.statusCode).toBe(415);
    expect(response.json().message).toContain('application/json or application/xml');
  });
});

describe('413', () => {
  it('gives the limit and the setting that raises it', async () => {
    server = await createTestServer({ file: { limits: { bodyMaxBytes: 2_048 } } });
    const response = await server.app.inject({
      method: 'POST',
      url: '/v1/instances',
      payload: { service: 'orders', host: '10.0.0.5', port: 8080, metadata: { big: 'x'.repeat(4_000) } },
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({
      code: 'REG_ERR_BODY_TOO_LARGE',
      message: 'the body is larger than 2048 bytes, the most this route takes (limits.bodyMaxBytes); send less, or raise limits.bodyMaxBytes',
    });
  });

  it('on a peer route, names limits.peerBodyMaxBytes', async () => {
    server = await createTestServer({ file: { limits: { peerBodyMaxBytes: 65_536 } } });
    const response = await server.app.inject({
      method: 'POST',
      url: '/v1/peer/replicate',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify({ from: 'peer-x', records: [], pad: 'x'.repeat(1_000_000) })),
    });
    expect(response.statusCode).toBe(413);
    expect(response.json().message).toBe(
      'the body is larger than 65536 bytes, the most this route takes (limits.peerBodyMaxBytes); send less, or raise limits.peerBodyMaxBytes',
    );
  });
});

describe('405', () => {
  it.each([
    ['GET', '/v1/instances', 'POST'],
    ['DELETE', '/v1/services', 'GET, HEAD'],
    ['POST', '/v1/services/orders/instances/i-1/heartbeat', 'PUT'],
    ['PATCH', '/v1/services/orders/instances/i-1', 'DELETE, GET, HEAD'],
    ['DELETE', '/eureka/apps/ORDERS', 'GET, HEAD, POST'],
    ['POST', '/healthz', 'GET, HEAD'],
  ])('%s %s answers 405 with Allow: %s', async (method, url, allow) => {
    server = await createTestServer();
    const response = await server.app.inject({ method: method as 'GET', url });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe(allow);
    expect(response.json()).toEqual({ code: 'REG_ERR_METHOD_NOT_ALLOWED', message: `${method} is not a method of ${url}: it takes ${allow}` });
  });

  it('an unknown path is still 404', async () => {
    server = await createTestServer();
    for (const [method, url] of [['GET', '/nowhere'], ['POST', '/v1/instances/extra'], ['GET', '/v1/services/orders/instances']] as const) {
      const response = await server.app.inject({ method, url });
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().code).toBe('REG_ERR_ROUTE_NOT_FOUND');
      expect(response.headers.allow).toBeUndefined();
    }
  });
});

describe('RouteMethods', () => {
  it.each([
    ['/v1/services/:service', '/v1/services/orders', true],
    ['/v1/services/:service', '/v1/services/orders/x', false],
    ['/v1/services/:service', '/v1/services/', false],
    ['/apps/:app/:id/status', '/apps/A/i.1/status', true],
    ['/ui/*', '/ui/a/b.js', true],
    ['/a.b', '/aXb', false],
  ])('%s matches %s: %s', (url, path, matches) => {
    expect(patternOf(url).test(path)).toBe(matches);
  });

  it('gathers the methods of every route that matches a path', () => {
    const routes = new RouteMethods();
    routes.add('GET', '/apps/:app');
    routes.add('HEAD', '/apps/:app');
    routes.add('post', '/apps/:app');
    routes.add('GET', '/apps/delta');
    expect(routes.methodsFor('/apps/delta')).toEqual(['GET', 'HEAD', 'POST']);
    expect(routes.methodsFor('/apps/orders')).toEqual(['GET', 'HEAD', 'POST']);
    expect(routes.methodsFor('/nothing')).toEqual([]);
  });
});
