import { afterEach, describe, expect, it } from 'vitest';
import { createTestConsul, type TestConsul } from '../../support/consul.js';
import { jsClientBody } from '../eureka/fixtures.js';

/**
 * The instance id and metadata key rules of src/registry/validate.ts hold on every write path:
 * native /v1, Eureka and Consul each refuse an id `.` or `..` (clients that normalise paths could
 * never reach it) and a metadata key with CR, LF or NUL, naming the field, and store nothing.
 */
let peer: TestConsul | undefined;
afterEach(async () => {
  await peer?.close();
  peer = undefined;
});

describe.each(['.', '..'])('instance id %j', (id) => {
  it('is refused by native /v1, Eureka and Consul, and nothing is stored', async () => {
    peer = await createTestConsul();
    const native = await peer.native.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: id } });
    expect(native.statusCode).toBe(400);
    expect(native.json().message).toContain('instanceId: must not be "." or ".."');
    const eureka = await peer.native.inject({ method: 'POST', url: '/eureka/v2/apps/orders', payload: jsClientBody({ instanceId: id }) });
    expect(eureka.statusCode).toBe(400);
    expect(eureka.json().message).toContain('must not be "." or ".."');
    const consul = await peer.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'orders', ID: id, Address: '10.0.0.5', Port: 8080 } });
    expect(consul.statusCode).toBe(400);
    expect(consul.body).toContain('must not be "." or ".."');
    expect(peer.node.store.size).toBe(0);
  });
});

describe.each(['a\rb', 'a\nb', 'a\u0000b'])('metadata key %j', (key) => {
  it('is refused by native /v1, Eureka and Consul, and nothing is stored', async () => {
    peer = await createTestConsul();
    const native = await peer.native.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080, metadata: { [key]: 'x' } } });
    expect(native.statusCode).toBe(400);
    expect(native.json().message).toContain('must not contain control characters');
    const eureka = await peer.native.inject({ method: 'POST', url: '/eureka/v2/apps/orders', payload: jsClientBody({ metadata: { [key]: 'x' } }) });
    expect(eureka.statusCode).toBe(400);
    expect(eureka.json().message).toContain('must not contain control characters');
    const consul = await peer.app.inject({ method: 'PUT', url: '/v1/agent/service/register', payload: { Name: 'orders', ID: 'o-1', Address: '10.0.0.5', Port: 8080, Meta: { [key]: 'x' } } });
    expect(consul.statusCode).toBe(400);
    expect(consul.body).toContain('must not contain control characters');
    expect(peer.node.store.size).toBe(0);
  });
});
