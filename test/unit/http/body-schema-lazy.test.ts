import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestServer, type TestServer } from '../../support/server.js';

// Records when typebox's schema compiler is first imported; the module itself is the real one.
const compiler = vi.hoisted(() => ({ loaded: false }));
vi.mock('typebox/schema', async (importOriginal) => {
  compiler.loaded = true;
  return importOriginal();
});

describe("typebox's schema compiler (some 160 modules, about 4 MB of RSS)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await createTestServer();
  });
  afterAll(async () => server.app.close());

  it('is not loaded by a started server, nor by the requests of routes that check no body', async () => {
    const registered = await server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: 'x' } });
    expect(registered.statusCode).toBe(201);
    const beat = await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/x/heartbeat' });
    expect(beat.statusCode).toBe(200);
    expect(compiler.loaded).toBe(false);
  });

  it('is loaded on the first body a route checks, which is answered as before', async () => {
    const refused = await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/x/status', payload: { status: 'up' } });
    expect(compiler.loaded).toBe(true);
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toEqual({ code: 'REG_ERR_VALIDATION', message: 'status: must be one of UP, DOWN, STARTING, OUT_OF_SERVICE' });
    // Later bodies, two at once, go through the same compiled check.
    const status = (value: string) => server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/x/status', payload: { status: value } });
    const [changed, again] = await Promise.all([status('DOWN'), status('nope')]);
    expect(changed.statusCode).toBe(200);
    expect(again.statusCode).toBe(400);
  });
});
