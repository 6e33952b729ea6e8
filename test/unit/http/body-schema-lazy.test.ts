import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestServer, type TestServer } from '../../support/server.js';

// Records whether typebox/compile (310 modules beyond typebox, 8.6 MB of RSS once loaded) is
// ever imported; the body schemas use typebox/schema's compiler (164 modules, 4.1 MB), the
// same check and findings without the value operations a body check never uses.
const heavy = vi.hoisted(() => ({ loaded: false }));
vi.mock('typebox/compile', async (importOriginal) => {
  heavy.loaded = true;
  return importOriginal();
});

describe("the body schemas' compiler", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await createTestServer();
  });
  afterAll(async () => server.app.close());

  it('is the schema engine alone: typebox/compile is never loaded, by a start, a register, a heartbeat or a refused body', async () => {
    const registered = await server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 8080, instanceId: 'x' } });
    expect(registered.statusCode).toBe(201);
    const beat = await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/x/heartbeat' });
    expect(beat.statusCode).toBe(200);
    const refused = await server.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/x/status', payload: { status: 'up' } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toEqual({ code: 'REG_ERR_VALIDATION', message: 'status: must be one of UP, DOWN, STARTING, OUT_OF_SERVICE' });
    const badRegister = await server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.5', port: 'x' } });
    expect(badRegister.statusCode).toBe(400);
    expect(heavy.loaded).toBe(false);
  });
});
