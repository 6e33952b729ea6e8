import { afterEach, describe, expect, it } from 'vitest';
import { hasNoBody } from '../../../src/http/body-parsers.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';
import { createTestServer, type TestServer } from '../../support/server.js';

/**
 * Many HTTP clients send `content-type: application/json` on every request (a fetch wrapper with
 * default headers did, on a DELETE): a route that takes no body accepts an empty one whatever its
 * content type, answers as it would without the header, and keeps the connection open.
 */

let server: TestServer | undefined;
let consul: TestConsul | undefined;
afterEach(async () => {
  await server?.app.close();
  await consul?.close();
  server = undefined;
  consul = undefined;
});

const instance = { service: 'orders', host: '10.0.0.5', port: 8080 };
const instanceUrl = '/v1/services/orders/instances/10.0.0.5:8080';
// With `content-length: 0` (undici on PUT) and with no length at all (undici on DELETE, fetch).
const emptyBodies = [
  { 'content-type': 'application/json', 'content-length': '0' },
  { 'content-type': 'application/json' },
  { 'content-type': 'application/json; charset=utf-8', 'content-length': '0' },
  { 'content-type': 'text/plain', 'content-length': '0' },
  { 'content-type': 'application/x-www-form-urlencoded' },
];

async function started(): Promise<TestServer> {
  server = await createTestServer();
  return server;
}

describe('native /v1: a route that takes no body', () => {
  it.each(emptyBodies)('answers as without a body when sent %j and no body, and keeps the connection', async (headers) => {
    const { app } = await started();
    expect((await app.inject({ method: 'POST', url: '/v1/instances', payload: instance })).statusCode).toBe(201);
    const heartbeat = await app.inject({ method: 'PUT', url: `${instanceUrl}/heartbeat`, headers });
    expect(heartbeat.statusCode).toBe(200);
    expect(heartbeat.headers.connection).not.toBe('close');
    const read = await app.inject({ method: 'GET', url: instanceUrl, headers });
    expect(read.statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v1/services/orders', headers })).json().instances).toHaveLength(1);
    const cancel = await app.inject({ method: 'DELETE', url: instanceUrl, headers });
    expect(cancel.statusCode).toBe(200);
    expect(cancel.headers.connection).not.toBe('close');
    expect((await app.inject({ url: instanceUrl })).statusCode).toBe(404);
  });

  it('a route that needs a body still refuses a missing one, naming what it needs, and keeps the connection', async () => {
    const { app } = await started();
    const register = await app.inject({ method: 'POST', url: '/v1/instances', headers: { 'content-type': 'application/json', 'content-length': '0' } });
    expect(register.statusCode).toBe(400);
    expect(register.json()).toMatchObject({ code: 'REG_ERR_VALIDATION', message: 'body: must be a JSON object' });
    expect(register.headers.connection).not.toBe('close');
  });

  it('a body that is there is still parsed: bad JSON is 400 REG_ERR_INVALID_JSON, another type 415 naming JSON', async () => {
    const { app } = await started();
    const badJson = await app.inject({ method: 'POST', url: '/v1/instances', headers: { 'content-type': 'application/json' }, payload: '{"service":' });
    expect(badJson.statusCode).toBe(400);
    expect(badJson.json().code).toBe('REG_ERR_INVALID_JSON');
    const text = await app.inject({ method: 'DELETE', url: instanceUrl, headers: { 'content-type': 'text/plain' }, payload: 'bye' });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toMatchObject({ code: 'REG_ERR_UNSUPPORTED_MEDIA_TYPE' });
    expect(text.json().message).toContain('send the body as application/json');
    // A whitespace body is a body, and not JSON.
    const blank = await app.inject({ method: 'POST', url: '/v1/instances', headers: { 'content-type': 'application/json' }, payload: '  ' });
    expect(blank.json().code).toBe('REG_ERR_INVALID_JSON');
  });
});

describe('Eureka: a bodiless PUT or DELETE with a content type', () => {
  it.each(emptyBodies)('heartbeat, status and cancel answer as without a body when sent %j', async (headers) => {
    const { app } = await started();
    expect((await app.inject({ method: 'POST', url: '/v1/instances', payload: instance })).statusCode).toBe(201);
    for (const prefix of ['/eureka/v2', '/eureka']) {
      expect((await app.inject({ method: 'PUT', url: `${prefix}/apps/ORDERS/10.0.0.5:8080`, headers })).statusCode).toBe(200);
    }
    expect((await app.inject({ method: 'PUT', url: '/eureka/v2/apps/ORDERS/10.0.0.5:8080/status?value=DOWN', headers })).statusCode).toBe(200);
    const cancel = await app.inject({ method: 'DELETE', url: '/eureka/v2/apps/ORDERS/10.0.0.5:8080', headers });
    expect(cancel.statusCode).toBe(200);
    expect(cancel.headers.connection).not.toBe('close');
  });
});

describe('Consul: a bodiless PUT with a content type', () => {
  it.each(emptyBodies)('a deregister answers as without a body when sent %j', async (headers) => {
    consul = await createTestConsul();
    const registered = await consul.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'orders', ID: 'o-1', Address: '10.0.0.5', Port: 8080 } });
    expect(registered.statusCode).toBe(200);
    const deregister = await consul.app.inject({ method: 'PUT', url: '/v1/agent/service/deregister/o-1', headers });
    expect(deregister.statusCode).toBe(200);
    expect(deregister.headers.connection).not.toBe('close');
  });
});

describe('hasNoBody', () => {
  it.each([
    [{}, true],
    [{ 'content-length': '0' }, true],
    [{ 'content-length': '2' }, false],
    [{ 'transfer-encoding': 'chunked' }, false],
    [{ 'transfer-encoding': 'chunked', 'content-length': '0' }, false],
  ])('%j -> %s', (headers, expected) => {
    expect(hasNoBody(headers)).toBe(expected);
  });
});
