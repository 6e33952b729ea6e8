import type { InjectOptions } from 'light-my-request';
import { afterEach, describe, expect, it } from 'vitest';
import { LISTING_IN_TURNS_MIN_INSTANCES } from '../../../src/native/instance-json.js';
import { openDoor as openSharedDoor, seen, type Door } from '../../support/front-door.js';
import { bearer, securedFile, TOKENS } from '../../support/security.js';

/**
 * The server's front door (src/http/front-door.ts) and the discover route's shortcut
 * (src/native/discover-shortcut.ts): a request through the server's own request listener gets
 * the very answer fastify gives (`app.inject` goes straight to fastify), whether the shortcut
 * took it or handed it on; the shortcut takes the plain discover and nothing else; and a
 * refused request is counted once against its rate limit.
 */

let opened: Door | undefined;
afterEach(async () => {
  await opened?.app.close();
  opened = undefined;
});

async function openDoor(options: Parameters<typeof openSharedDoor>[0] = {}): Promise<Door> {
  opened = await openSharedDoor(options);
  return opened;
}

async function register(door: Door, service: string, i: number, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<void> {
  const answer = await door.app.inject({ method: 'POST', url: '/v1/instances', headers, payload: { service, host: '10.0.0.1', port: 8000 + i, instanceId: `i-${i}`, ...extra } });
  expect(answer.statusCode, answer.body).toBe(201);
}

describe('the front door', () => {
  it('answers a plain discover through the shortcut, byte for byte as fastify does', async () => {
    const door = await openDoor();
    for (let i = 0; i < 5; i++) await register(door, 'orders', i, { metadata: { zone: 'a' } });
    await register(door, 'orders', 9, { status: 'DOWN' });
    for (const url of ['/v1/services/orders', '/v1/services/orders?status=all', '/v1/services/ORDERS?namespace=default', '/v1/services/orders?', '/v1/services/none']) {
      door.fastifySaw.length = 0;
      // Twice each: the second read is served from the shared bytes.
      for (let read = 0; read < 2; read++) {
        const through = await door.door({ url });
        expect(door.fastifySaw, url).toEqual([]);
        expect(seen(through), url).toEqual(seen(await door.app.inject({ url })));
        expect(through.headers['x-registry-index'], url).toBe(String(JSON.parse(through.body).revision));
      }
    }
  });

  it('hands fastify a discover of a service so large its listing is built in slices, answered once built, the same bytes', async () => {
    const door = await openDoor({ file: { limits: { instancesPerServiceMax: 100_000 } } });
    const count = LISTING_IN_TURNS_MIN_INSTANCES + 10;
    for (let i = 0; i < count; i++) {
      door.node.registry.register({ namespace: 'default', service: 'big', instanceId: `i-${i}`, data: { host: '10.0.0.1', port: 1 + i, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} }, leaseDurationMs: 60_000 });
    }
    const through = await door.door({ url: '/v1/services/big' });
    expect(door.fastifySaw).toEqual(['/v1/services/big']);
    expect(through.statusCode).toBe(200);
    const body = JSON.parse(through.body) as { revision: number; instances: unknown[] };
    expect(body.instances).toHaveLength(count);
    expect(through.headers['x-registry-index']).toBe(String(body.revision));
    expect(seen(through)).toEqual(seen(await door.app.inject({ url: '/v1/services/big' })));
  });

  it('hands fastify every other form of the route, and every other route, with the answer fastify gives', async () => {
    const door = await openDoor();
    await register(door, 'orders', 1, { zone: 'a' });
    const handedOn = [
      { url: '/v1/services/orders?near=a' },
      { url: '/v1/services/orders?status=bad' },
      { url: '/v1/services/orders?status=all&status=up' },
      { url: '/v1/services/orders?group=' },
      { url: '/v1/services/orders?namespace=-bad' },
      { url: '/v1/services/or%64ers' },
      { url: '/v1/services/orders/' },
      { url: '/v1/services/-orders' },
      { url: `/v1/services/${'a'.repeat(129)}` },
      { url: '/v1/services/orders/instances/i-1' },
      { url: '/v1/services/orders?index=0&wait=1ms' },
      { method: 'HEAD' as const, url: '/v1/services/orders' },
      { method: 'DELETE' as const, url: '/v1/services/orders/instances/none' },
      { url: '/v1/services' },
      { url: '/v1/cluster' },
    ];
    for (const request of handedOn) {
      door.fastifySaw.length = 0;
      const through = await door.door(request);
      expect(door.fastifySaw, request.url).toHaveLength(1);
      const direct = await door.app.inject(request);
      // The cluster view carries figures that move between two calls: its status is enough.
      if (request.url === '/v1/cluster') expect(through.statusCode).toBe(direct.statusCode);
      else expect(seen(through), request.url).toEqual(seen(direct));
    }
  });

  it('hands fastify the route until the start-up sync is done: 503', async () => {
    const door = await openDoor({ start: false });
    const refused = await door.door({ url: '/v1/services/orders' });
    expect(refused.statusCode).toBe(503);
    expect(refused.json().code).toBe('REG_ERR_NOT_READY');
    expect(door.fastifySaw).toEqual(['/v1/services/orders']);
  });

  it('times the requests it answers into the HTTP latency histogram, under the route', async () => {
    const door = await openDoor();
    for (let i = 0; i < 3; i++) await door.door({ url: '/v1/services/orders' });
    expect(door.fastifySaw).toEqual([]);
    const metrics = (await door.app.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/registry_http_request_duration_seconds_count\{method="GET",route="\/v1\/services\/:service",status_code="200"\} 3\n/);
  });

  it('hands fastify every request while the server closes', async () => {
    const door = await openDoor();
    const closing = door.app.close();
    // Fastify marks itself closing and runs the preClose hooks as its close begins.
    await new Promise((resolve) => setImmediate(resolve));
    // Fastify's own 503 for a closing server (the shortcut answers nothing but 200).
    const answer = await door.door({ url: '/v1/services/orders' });
    await closing;
    opened = undefined;
    expect(answer.statusCode).toBe(503);
  });
});

describe('the front door on a peer with tokens', () => {
  it('leaves the answers of a peer that is not ready to fastify, whatever the token may read (503 before a namespace refusal)', async () => {
    const door = await openDoor({ file: securedFile(), start: false });
    const cases: [InjectOptions, number][] = [
      [{ url: '/v1/services/orders', headers: bearer(TOKENS.reader) }, 503],
      [{ url: '/v1/services/orders?namespace=team-b', headers: bearer(TOKENS.reader) }, 503],
      [{ url: '/v1/services/orders?namespace=team-a', headers: bearer(TOKENS.admin) }, 403],
      [{ url: '/v1/services/orders?namespace=team-a' }, 401],
    ];
    for (const [request, status] of cases) {
      const through = await door.door(request);
      expect(through.statusCode, JSON.stringify(request)).toBe(status);
      expect(seen(through), JSON.stringify(request)).toEqual(seen(await door.app.inject(request)));
    }
  });

  it('takes what the token may read, and hands on the refusals with the answers fastify gives', async () => {
    const door = await openDoor({ file: securedFile() });
    await register(door, 'orders', 1, { namespace: 'team-a' }, bearer(TOKENS.writer));
    const cases: [InjectOptions, number, boolean][] = [
      [{ url: '/v1/services/orders?namespace=team-a', headers: bearer(TOKENS.reader) }, 200, true],
      [{ url: '/v1/services/orders?namespace=team-a', headers: bearer(TOKENS.root) }, 200, true],
      [{ url: '/v1/services/orders?namespace=team-a' }, 401, false],
      [{ url: '/v1/services/orders?namespace=team-a', headers: bearer('no-such-token-0000000000') }, 401, false],
      [{ url: '/v1/services/orders?namespace=team-a', headers: bearer(TOKENS.admin) }, 403, false],
      [{ url: '/v1/services/orders?namespace=team-a', headers: bearer(TOKENS.otherTeam) }, 403, false],
      [{ url: '/v1/services/orders', headers: bearer(TOKENS.reader) }, 403, false],
      [{ url: '/v1/services/orders?namespace=team-a&namespace=team-b', headers: bearer(TOKENS.reader) }, 403, false],
    ];
    for (const [request, status, taken] of cases) {
      door.fastifySaw.length = 0;
      const through = await door.door(request);
      expect(through.statusCode, JSON.stringify(request)).toBe(status);
      expect(door.fastifySaw.length === 0, JSON.stringify(request)).toBe(taken);
      expect(seen(through), JSON.stringify(request)).toEqual(seen(await door.app.inject(request)));
    }
  });

  it('counts a request once against its rate limit, whichever way it goes', async () => {
    const door = await openDoor({ file: { limits: { rateLimitPerSecond: 1, rateLimitBurst: 4 } } });
    const plain = { url: '/v1/services/orders', remoteAddress: '10.0.0.7' };
    // Admitted by the shortcut, then handed on for its bad query: fastify must not count it again.
    const bad = { url: '/v1/services/orders?status=bad', remoteAddress: '10.0.0.7' };
    const statuses: number[] = [];
    for (const request of [plain, bad, plain, bad, plain, bad]) statuses.push((await door.door(request)).statusCode);
    expect(statuses).toEqual([200, 400, 200, 400, 429, 429]);
    const refused = await door.door(plain);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json().code).toBe('REG_ERR_RATE_LIMITED');
    // A second later one more token is there: one request through, the next refused.
    await door.clock.advance(1_000);
    expect([(await door.door(bad)).statusCode, (await door.door(plain)).statusCode]).toEqual([400, 429]);
  });
});
