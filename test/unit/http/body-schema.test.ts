import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyValidator } from '../../../src/schema/body-schema.js';
import { EurekaInstanceBody } from '../../../src/eureka/instance-schema.js';
import { GuardModes } from '../../../src/http/openapi/schemas.js';
import { RegisterBody, StatusBody } from '../../../src/native/schemas.js';
import { createTestServer, type TestServer } from '../../support/server.js';

/** The `{code, message}` a schema answers a body with, or 'ok'. */
function answer(schema: Parameters<typeof bodyValidator>[0], body: unknown): unknown {
  const result = bodyValidator(schema)(body);
  return result === true ? 'ok' : (result as unknown as { error: { toJSON(): unknown } }).error.toJSON();
}
const validation = (message: string) => ({ code: 'REG_ERR_VALIDATION', message });

describe('body schemas answer as the hand validators did', () => {
  it.each([
    [{ selfPreservation: 'off' }, 'ok'],
    [{ selfPreservation: 'auto', partitionGuard: 'off' }, 'ok'],
    [null, validation('body: must be a JSON object {"selfPreservation": "auto"|"off", "partitionGuard": "auto"|"off"}')],
    [[], validation('body: must be a JSON object {"selfPreservation": "auto"|"off", "partitionGuard": "auto"|"off"}')],
    [{}, validation('body: must set selfPreservation or partitionGuard')],
    [{ bogus: 1, selfPreservation: 'x' }, validation('bogus: is not a known field')],
    [{ selfPreservation: 'x', partitionGuard: 'y' }, validation('selfPreservation: must be "auto" or "off"')],
    [{ partitionGuard: null }, validation('partitionGuard: must be "auto" or "off"')],
  ])('eviction guards %j', (body, expected) => {
    expect(answer(GuardModes, body)).toEqual(expected);
  });

  it.each([
    [{ status: 'DOWN' }, 'ok'],
    // Other fields were always ignored.
    [{ status: 'UP', note: 'x' }, 'ok'],
    [null, validation('body: must be a JSON object {"status": ...}')],
    ['UP', validation('body: must be a JSON object {"status": ...}')],
    [{}, validation('status: must be one of UP, DOWN, STARTING, OUT_OF_SERVICE')],
    [{ status: 'up' }, validation('status: must be one of UP, DOWN, STARTING, OUT_OF_SERVICE')],
    [{ status: 3 }, validation('status: must be one of UP, DOWN, STARTING, OUT_OF_SERVICE')],
  ])('status %j', (body, expected) => {
    expect(answer(StatusBody, body)).toEqual(expected);
  });

  const register = { service: 'orders', host: '10.0.0.1', port: 8080 };
  it.each([
    [register, 'ok'],
    [{ ...register, securePort: null, weight: null, zone: null, metadata: null, group: null, leaseDurationMs: null }, 'ok'],
    [null, validation('body: must be a JSON object')],
    [{ ...register, service: null }, validation('service: is required')],
    [{ ...register, instanceId: null }, validation('instanceId: is required')],
    [{ ...register, securePort: 0 }, validation('securePort: must be between 1 and 65535')],
    [{ ...register, securePort: 'x' }, validation('securePort: must be an integer')],
    [{ ...register, group: 'a b' }, validation('group: must start with a letter or digit and hold only letters, digits, ".", "_", ":" and "-"')],
    [{ ...register, metadata: { '': 'x' } }, validation('metadata: keys must not be empty')],
    [{ ...register, leaseDurationMs: 1.5 }, validation('leaseDurationMs: must be an integer (milliseconds)')],
    [{ ...register, zone: 'z'.repeat(65) }, validation('zone: must be at most 64 characters')],
  ])('register %j', (body, expected) => {
    expect(answer(RegisterBody, body)).toEqual(expected);
  });

  const eureka = { app: 'orders', hostName: 'h', ipAddr: '10.0.0.1', dataCenterInfo: { name: 'MyOwn' } };
  it.each([
    [{ instance: eureka }, 'ok'],
    [{ instance: { ...eureka, port: { $: '8080', '@enabled': 'TRUE' }, securePort: '443', metadata: '' } }, 'ok'],
    [null, validation('instance: is required: the body is {"instance": {...}} (JSON) or <instance>...</instance> (XML)')],
    [{ instance: [] }, validation('instance: is required: the body is {"instance": {...}} (JSON) or <instance>...</instance> (XML)')],
    [{ instance: { ...eureka, app: '' } }, validation('instance.app: is required')],
    [{ instance: { ...eureka, ipAddr: { x: 1 } } }, validation('instance.ipAddr: is required')],
    [{ instance: { ...eureka, dataCenterInfo: 'MyOwn' } }, validation('instance.dataCenterInfo: is required: {"@class": ..., "name": "MyOwn"}')],
    [{ instance: { ...eureka, dataCenterInfo: { metadata: { a: {} } } } }, validation('instance.dataCenterInfo.metadata.a: must be a string')],
    [{ instance: { ...eureka, port: { $: 'http' } } }, validation('instance.port: must be a port number, or {"$": port, "@enabled": true|false}')],
    [{ instance: { ...eureka, securePort: {} } }, validation('instance.securePort: must be a port number, or {"$": port, "@enabled": true|false}')],
    [{ instance: { ...eureka, port: { $: 80, '@enabled': 'yes' } } }, validation('instance.port.@enabled: must be true or false')],
    [{ instance: { ...eureka, status: 1 } }, validation('instance.status: must be one of UP, DOWN, STARTING, OUT_OF_SERVICE')],
  ])('Eureka instance %j', (body, expected) => {
    expect(answer(EurekaInstanceBody, body)).toEqual(expected);
  });

  it("falls back to the field's name and the schema's own words where no message is given", () => {
    const schema = Type.Object({ port: Type.Integer({ minimum: 1 }), tags: Type.Array(Type.String()) });
    expect(answer(schema, { port: 0, tags: [] })).toEqual(validation('port: must be >= 1'));
    expect(answer(schema, { port: 1 })).toEqual(validation('tags: is required'));
    expect(answer(schema, { port: 1, tags: [1] })).toEqual(validation('tags.0: must be string'));
  });
});

describe('routes whose definition validates the body', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await createTestServer();
  });
  afterAll(async () => server.app.close());

  it('refuse a body that does not fit with 400 {code, message}, before the route changes anything', async () => {
    const revision = server.node.store.revision;
    const noBody = await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/x/status' });
    expect(noBody.statusCode).toBe(400);
    expect(noBody.json()).toEqual(validation('body: must be a JSON object {"status": ...}'));
    const guards = await server.app.inject({ method: 'PUT', url: '/v1/admin/eviction-guards', payload: {} });
    expect(guards.statusCode).toBe(400);
    expect(guards.json()).toEqual(validation('body: must set selfPreservation or partitionGuard'));
    expect(server.node.store.revision).toBe(revision);
  });

  it('check the register bodies of both APIs, and keep 415 for a Eureka body of another type', async () => {
    const revision = server.node.store.revision;
    const native = await server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: '8080' } });
    expect(native.statusCode).toBe(400);
    expect(native.json()).toEqual(validation('port: must be an integer'));
    const xml = '<instance><app>ORDERS</app><hostName>h</hostName><ipAddr>10.0.0.5</ipAddr></instance>';
    const noDataCenter = await server.app.inject({ method: 'POST', url: '/eureka/apps/ORDERS', headers: { 'content-type': 'application/xml' }, payload: xml });
    expect(noDataCenter.statusCode).toBe(400);
    expect(noDataCenter.json()).toEqual(validation('instance.dataCenterInfo: is required: {"@class": ..., "name": "MyOwn"}'));
    const text = await server.app.inject({ method: 'POST', url: '/eureka/apps/ORDERS', headers: { 'content-type': 'text/plain' }, payload: 'instance' });
    expect(text.statusCode).toBe(415);
    expect(server.node.store.revision).toBe(revision);
  });

  it('hand the body to the route as sent: no field coerced, removed or defaulted', async () => {
    const registered = await server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: 'x' } });
    expect(registered.statusCode).toBe(201);
    const changed = await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/x/status', payload: { status: 'DOWN', note: 1 } });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().status).toBe('DOWN');
    const off = await server.app.inject({ method: 'PUT', url: '/v1/admin/eviction-guards', payload: { partitionGuard: 'off' } });
    expect(off.json().partitionGuard.mode).toBe('off');
    expect(off.json().selfPreservation.mode).toBe('auto');
  });
});
