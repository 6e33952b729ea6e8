import { afterEach, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

const register = (id: string) =>
  server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: id, leaseDurationMs: 600_000 } });

describe('GET /v1/services/{service}?index=R&wait=D (long poll)', () => {
  it('answers at once when the index is behind', async () => {
    server = await createTestServer();
    await register('a');
    const response = await server.app.inject({ url: '/v1/services/orders?index=0&wait=30s' });
    expect(response.json().instances).toHaveLength(1);
    expect(response.headers['x-registry-index']).toBe('1');
  });

  it('waits until the service changes, then answers the new listing', async () => {
    server = await createTestServer();
    await register('a');
    let done = false;
    const pending = server.app.inject({ url: '/v1/services/orders?index=1&wait=5m' }).then((response) => {
      done = true;
      return response;
    });
    await server.clock.advance(60_000);
    expect(done).toBe(false);
    await register('b');
    await server.clock.advance(0);
    const response = await pending;
    expect(response.json().instances.map((i: { instanceId: string }) => i.instanceId)).toEqual(['a', 'b']);
    expect(Number(response.headers['x-registry-index'])).toBeGreaterThan(1);
  });

  it('answers the unchanged listing when the wait ends, and caps the wait at longPollMaxWaitMs', async () => {
    server = await createTestServer({ file: { cluster: { longPollMaxWaitMs: 10_000 } } });
    await register('a');
    let done = false;
    const pending = server.app.inject({ url: '/v1/services/orders?index=1&wait=60m' }).then((response) => {
      done = true;
      return response;
    });
    await server.clock.advance(9_999);
    expect(done).toBe(false);
    await server.clock.advance(700);
    expect(done).toBe(true);
    expect((await pending).headers['x-registry-index']).toBe('1');
  });

  it.each([
    ['index=-1', 'index'],
    ['index=abc', 'index'],
    ['index=1&wait=soon', 'wait'],
    ['index=1&wait=5h', 'wait'],
  ])('refuses %s naming %s', async (query, field) => {
    server = await createTestServer();
    const response = await server.app.inject({ url: `/v1/services/orders?${query}` });
    expect(response.statusCode).toBe(400);
    expect(response.json().message.startsWith(`${field}:`)).toBe(true);
  });

  it('refuses a long poll beyond the watcher limit with 429 and Retry-After', async () => {
    server = await createTestServer({ file: { cluster: { watchMaxWatchers: 1 } } });
    void server.app.inject({ url: '/v1/services/orders?index=0&wait=30s' });
    await server.clock.advance(0);
    const response = await server.app.inject({ url: '/v1/services/orders?index=0&wait=30s' });
    expect(response.statusCode).toBe(429);
    expect(response.json().code).toBe('REG_ERR_TOO_MANY_WATCHERS');
    expect(response.headers['retry-after']).toBe('5');
  });

  it('refuses a bad watch query before any stream starts', async () => {
    server = await createTestServer();
    const response = await server.app.inject({ url: '/v1/watch?services=ok,bad%20name' });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toMatch(/^services:/);
    // Found by fuzzing: a repeated parameter arrives as an array (it answered 500).
    const repeated = await server.app.inject({ url: '/v1/watch?services=a&services=b' });
    expect(repeated.statusCode).toBe(400);
    expect(repeated.json().message).toBe('services: must be given once, as a comma-separated list');
  });
});
