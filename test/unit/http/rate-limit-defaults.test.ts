import { afterEach, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from '../../support/server.js';

/**
 * Issue 17, point 1: with no configuration, one client registering and heartbeating a fleet
 * gets no 429, from this host or from another; the abuse limits still refuse a flood, and the
 * refusal names the setting that raises them.
 */
let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

const register = (i: number, remoteAddress: string) =>
  server!.app.inject({
    method: 'POST',
    url: '/v1/instances',
    remoteAddress,
    payload: { service: `svc-${i % 10}`, host: '10.0.0.5', port: 8080, instanceId: `i-${i}` },
  });
const heartbeat = (i: number, remoteAddress: string) =>
  server!.app.inject({ method: 'PUT', url: `/v1/services/svc-${i % 10}/instances/i-${i}/heartbeat`, remoteAddress });

/** Runs `call(0..count-1)` with `inFlight` at a time; the statuses seen, with their counts. */
async function run(count: number, inFlight: number, call: (i: number) => Promise<{ statusCode: number }>): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const { statusCode } = await call(next++);
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return statuses;
}

describe('the default rate limits', () => {
  it('take 10,000 registrations at 64 in flight, then their heartbeats, from one loopback client', async () => {
    server = await createTestServer();
    expect(await run(10_000, 64, (i) => register(i, '127.0.0.1'))).toEqual({ 201: 10_000 });
    expect(await run(10_000, 64, (i) => heartbeat(i, '127.0.0.1'))).toEqual({ 200: 10_000 });
    // A steady load goes on with no refusal: the clock moves, the client keeps sending.
    for (let second = 0; second < 3; second++) {
      await server.clock.advance(1_000);
      expect(await run(5_000, 64, (i) => heartbeat(i, '::1'))).toEqual({ 200: 5_000 });
    }
  }, 120_000);

  it('take 10,000 registrations and heartbeats at once from one other host (a NAT, a proxy)', async () => {
    server = await createTestServer();
    expect(await run(10_000, 64, (i) => register(i, '10.0.0.7'))).toEqual({ 201: 10_000 });
    expect(await run(10_000, 64, (i) => heartbeat(i, '10.0.0.7'))).toEqual({ 200: 10_000 });
  }, 120_000);

  it('still refuse a flood from another host, naming the settings that raise the limit', async () => {
    server = await createTestServer({ file: { limits: { rateLimitPerSecond: 5, rateLimitBurst: 10 } } });
    expect(await run(12, 1, (i) => register(i, '10.0.0.7'))).toEqual({ 201: 10, 429: 2 });
    const refused = await register(99, '10.0.0.7');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toEqual({
      code: 'REG_ERR_RATE_LIMITED',
      message:
        'too many requests from address 10.0.0.7 (requests without a valid token): more than 5/s after a burst of 10; retry in 1 s, or raise limits.rateLimitPerSecond and limits.rateLimitBurst; clients behind one proxy or NAT share its address: tokens are limited one by one',
    });
    // Loopback callers are not limited unless configured.
    expect(await run(50, 1, (i) => register(i, '127.0.0.1'))).toEqual({ 200: 10, 201: 40 });
  });

  it('limit loopback callers once rateLimitLoopbackPerSecond is set, and say so', async () => {
    server = await createTestServer({ file: { limits: { rateLimitLoopbackPerSecond: 5, rateLimitBurst: 10 } } });
    expect(await run(11, 1, (i) => register(i, '127.0.0.1'))).toEqual({ 201: 10, 429: 1 });
    expect((await register(99, '127.0.0.1')).json().message).toContain('more than 5/s after a burst of 10; retry in 1 s, or raise limits.rateLimitLoopbackPerSecond');
  });
});
