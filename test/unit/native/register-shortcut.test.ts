import { performance } from 'node:perf_hooks';
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { InjectOptions } from 'light-my-request';
import { describe, expect, it, vi } from 'vitest';
import type { ShortcutContext } from '../../../src/http/front-door.js';
import { REGISTER_SHORTCUT_BODY_MAX_BYTES, registerShortcut, type RegisterShortcutDeps } from '../../../src/native/register-shortcut.js';
import type { RegisterResult } from '../../../src/registry/registry.js';
import { both, doorOf, doorsClosedAfterEach, listing, seen, shortcutOutcome, expectNothingOnceClientLeft } from '../../support/front-door.js';
import { simulatedDisk, startDurablePeer } from '../../support/durable-node.js';
import { bearer, securedFile, TOKENS } from '../../support/security.js';

/**
 * The register route's shortcut (src/native/register-shortcut.ts). Two peers alike (same
 * config, clock and seed) get the same requests, one through its front door and the other
 * straight to fastify (`app.inject`): every answer must be the same, byte for byte but for the
 * `Date` header, whether the shortcut answered it, handed it back after reading its body, or
 * never took it; and the two registries must hold the same.
 */

const doors = doorsClosedAfterEach();
const openTwins = doors.twins;

const JSON_HEADERS = { 'content-type': 'application/json' };

function registration(request: Partial<InjectOptions> & { body?: unknown }): InjectOptions {
  const { body, ...rest } = request;
  return {
    method: 'POST',
    url: '/v1/instances',
    ...rest,
    headers: { ...JSON_HEADERS, ...rest.headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  };
}

const instance = (instanceId: string, extra: Record<string, unknown> = {}) => ({ service: 'orders', instanceId, host: '10.0.0.1', port: 8080, ...extra });

describe('the register shortcut', () => {
  it('answers new and repeated registrations itself, as fastify does, and writes the same records', async () => {
    const twin = await openTwins();
    const taken = [
      registration({ body: instance('i-1', { metadata: { zone: 'a', build: '7f3c' }, weight: 5 }) }),
      // Again, the same: a lease renewal (200); then changed data (200, a new version).
      registration({ body: instance('i-1', { metadata: { zone: 'a', build: '7f3c' }, weight: 5 }) }),
      registration({ body: instance('i-1', { port: 9090 }) }),
      registration({ body: instance('i-2'), headers: { 'content-type': 'application/json; charset=utf-8' } }),
      registration({ url: '/v1/instances?namespace=team-a', body: instance('i-3') }),
      registration({ url: '/v1/instances?namespace=team-a', body: instance('i-4', { namespace: 'team-a' }) }),
      registration({ body: instance('i-5', { namespace: 'team-a', leaseDurationMs: 45_000 }) }),
    ];
    const statuses: number[] = [];
    for (const request of taken) {
      const answer = await both(twin, request);
      expect(answer.fastify, String(request.payload)).toBe(false);
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([201, 200, 200, 201, 201, 201, 201]);
    for (const namespace of ['default', 'team-a']) expect(await listing(twin.through, 'orders', namespace)).toEqual(await listing(twin.direct, 'orders', namespace));
  });

  it('hands back, with the body it read, every registration it cannot answer: fastify gives its answer and nothing is written', async () => {
    const twin = await openTwins({ file: { limits: { instancesPerServiceMax: 1 } } });
    expect((await both(twin, registration({ body: instance('first') }))).status).toBe(201);
    const handedBack: [InjectOptions, number][] = [
      [registration({ body: '{"service": "orders", ' }), 400],
      [registration({ body: '{"service":"orders","instanceId":"i-9","host":"10.0.0.1","port":1,"__proto__":{"x":1}}' }), 400],
      [registration({ body: '{"service":"orders","instanceId":"i-9","host":"10.0.0.1","port":1,"constructor":{"prototype":{"x":1}}}' }), 400],
      [registration({ body: '[1, 2]' }), 400],
      [registration({ body: 'null' }), 400],
      [registration({ body: instance('i-9', { port: 'eighty' }) }), 400],
      [registration({ body: instance('i-9', { colour: 'blue' }) }), 400],
      [registration({ body: instance('..') }), 400],
      [registration({ url: '/v1/instances?namespace=team-a', body: instance('i-9', { namespace: 'team-b' }) }), 400],
      [registration({ url: '/v1/instances?namespace=-bad', body: instance('i-9') }), 400],
      [registration({ url: '/v1/instances?namespace=a&namespace=b', body: instance('i-9') }), 400],
      // The service already holds its quota of one.
      [registration({ body: instance('second') }), 409],
    ];
    for (const [request, status] of handedBack) {
      const answer = await both(twin, request);
      expect(answer, String(request.payload)).toEqual({ status, fastify: true });
    }
    expect(await listing(twin.through)).toEqual(await listing(twin.direct));
    expect(JSON.parse(await listing(twin.through)).instances).toHaveLength(1);
  });

  it('leaves to fastify, untouched, what it does not take: other types, no stated length, a large body, other paths and methods', async () => {
    const twin = await openTwins();
    const large = instance('big', { metadata: { blob: 'x'.repeat(REGISTER_SHORTCUT_BODY_MAX_BYTES) } });
    const untaken: InjectOptions[] = [
      registration({ body: instance('i-1'), headers: { 'content-type': 'text/plain' } }),
      registration({ body: instance('i-1'), headers: { 'content-type': 'application/vnd.api+json' } }),
      registration({ body: instance('i-1'), headers: { 'content-encoding': 'gzip' } }),
      { method: 'POST', url: '/v1/instances', headers: JSON_HEADERS },
      { method: 'POST', url: '/v1/instances', headers: { ...JSON_HEADERS, 'transfer-encoding': 'chunked' }, payload: `${JSON.stringify(instance('i-1')).length.toString(16)}\r\n${JSON.stringify(instance('i-1'))}\r\n0\r\n\r\n` },
      registration({ body: large }),
      registration({ url: '/v1/instances/', body: instance('i-1') }),
      registration({ url: '/v1/instancesX', body: instance('i-1') }),
      { ...registration({ body: instance('i-1') }), method: 'PUT' },
      { method: 'GET', url: '/v1/instances' },
      // A dev peer on loopback takes only its own names as Host (DNS rebinding): refused before the body.
      registration({ body: instance('i-1'), headers: { host: 'rebound.example' } }),
    ];
    for (const request of untaken) {
      const answer = await both(twin, request);
      expect(answer.fastify, `${request.method} ${request.url} ${JSON.stringify(request.headers)}`).toBe(true);
    }
    expect(await listing(twin.through)).toEqual(await listing(twin.direct));
  });

  it('answers a registration whose durability barrier fails as fastify does (503), and does not write it a second time', async () => {
    const outcome = async (throughTheDoor: boolean) => {
      const { clock, disk } = simulatedDisk();
      const peer = await startDurablePeer(disk, clock, { storage: { syncPolicy: 'always' } });
      disk.syncFault = 'EIO';
      const door = doorOf(peer.app);
      const request = registration({ body: instance('i-1') });
      const revision = peer.node.store.revision;
      const answer = throughTheDoor ? await door.door(request) : await peer.app.inject(request);
      const writes = peer.node.store.revision - revision;
      await peer.node.stop();
      await peer.app.close();
      return { answer: seen(answer), writes, fastify: door.fastifySaw.length > 0 };
    };
    const through = await outcome(true);
    const direct = await outcome(false);
    expect(JSON.parse(through.answer.body).code).toBe('REG_ERR_STORAGE');
    expect({ ...through, fastify: undefined }).toEqual({ ...direct, fastify: undefined });
    expect(through).toMatchObject({ writes: 1, fastify: true });
  });

  it('is fastify on a peer that is not ready: 503, nothing written', async () => {
    const door = await doors.open({ start: false });
    const answer = await door.door(registration({ body: instance('i-1') }));
    expect(answer.statusCode).toBe(503);
    expect(answer.json().code).toBe('REG_ERR_NOT_READY');
    expect(door.fastifySaw).toEqual(['/v1/instances']);
  });

  it('takes what the token may write, and hands on or back the refusals with the answers fastify gives', async () => {
    const twin = await openTwins({ file: securedFile() });
    const cases: [InjectOptions, number, boolean][] = [
      [registration({ body: instance('i-1', { namespace: 'team-a' }), headers: bearer(TOKENS.writer) }), 201, false],
      [registration({ url: '/v1/instances?namespace=team-a', body: instance('i-2'), headers: bearer(TOKENS.writer) }), 201, false],
      [registration({ body: instance('i-3', { namespace: 'team-b' }), headers: bearer(TOKENS.root) }), 201, false],
      [registration({ body: instance('i-4', { namespace: 'team-a' }) }), 401, true],
      [registration({ body: instance('i-4', { namespace: 'team-a' }), headers: bearer(TOKENS.reader) }), 403, true],
      // Refused for the namespace only once the body is read (it names none: default).
      [registration({ body: instance('i-4', { namespace: 'team-b' }), headers: bearer(TOKENS.writer) }), 403, true],
      [registration({ body: instance('i-4'), headers: bearer(TOKENS.writer) }), 403, true],
      [registration({ url: '/v1/instances?namespace=team-b', body: instance('i-4'), headers: bearer(TOKENS.writer) }), 403, true],
    ];
    for (const [request, status, handedOn] of cases) {
      const answer = await both(twin, request);
      expect(answer, `${request.url} ${String(request.payload)} ${JSON.stringify(request.headers)}`).toEqual({ status, fastify: handedOn });
    }
    for (const namespace of ['team-a', 'team-b']) {
      const read = { url: `/v1/services/orders?namespace=${namespace}`, headers: bearer(TOKENS.root) };
      expect((await twin.through.app.inject(read)).body).toEqual((await twin.direct.app.inject(read)).body);
    }
  });

  it('counts a registration once against its rate limit, answered or handed back', async () => {
    const door = await doors.open({ file: { limits: { rateLimitPerSecond: 1, rateLimitBurst: 4 } } });
    const good = (i: number) => ({ ...registration({ body: instance(`i-${i}`) }), remoteAddress: '10.0.0.7' });
    const bad = { ...registration({ body: instance('i-x', { port: 'eighty' }) }), remoteAddress: '10.0.0.7' };
    const statuses: number[] = [];
    for (const request of [good(1), bad, good(2), bad, good(3), bad]) statuses.push((await door.door(request)).statusCode);
    expect(statuses).toEqual([201, 400, 201, 400, 429, 429]);
  });

  it('times the registrations it answers into the HTTP latency histogram, under the route and status', async () => {
    const door = await doors.open();
    for (let i = 0; i < 3; i++) await door.door(registration({ body: instance(`i-${i}`) }));
    await door.door(registration({ body: instance('i-0') }));
    expect(door.fastifySaw).toEqual([]);
    const metrics = (await door.app.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/registry_http_request_duration_seconds_count\{method="POST",route="\/v1\/instances",status_code="201"\} 3\n/);
    expect(metrics).toMatch(/registry_http_request_duration_seconds_count\{method="POST",route="\/v1\/instances",status_code="200"\} 1\n/);
  });

  it('times a registration it hands back from when it took it, not from the hand-back', async () => {
    const door = await doors.open();
    // The shortcut's clock reading as it takes the request: 5 s before now, as for a slow upload.
    const spy = vi.spyOn(performance, 'now').mockReturnValueOnce(performance.now() - 5_000);
    try {
      expect((await door.door(registration({ body: instance('i-x', { port: 'eighty' }) }))).statusCode).toBe(400);
    } finally {
      spy.mockRestore();
    }
    expect(door.fastifySaw).toEqual(['/v1/instances']);
    const metrics = (await door.app.inject({ url: '/metrics' })).body;
    const sum = /registry_http_request_duration_seconds_sum\{method="POST",route="\/v1\/instances",status_code="400"\} (\S+)\n/.exec(metrics)?.[1];
    expect(Number(sum)).toBeGreaterThanOrEqual(5);
  });
});

describe('the register shortcut, on its own', () => {
  /** A request whose body the test feeds, and what the shortcut did with it. */
  function harness(register: RegisterShortcutDeps['register']) {
    const raw = Object.assign(new PassThrough(), {
      method: 'POST',
      url: '/v1/instances',
      headers: { 'content-type': 'application/json', 'content-length': '2' },
    }) as unknown as IncomingMessage & PassThrough;
    const { res, written, handedBack, writeFailures, handBack, handOn } = shortcutOutcome();
    const observe = vi.fn();
    const context = {
      guard: { admitBeforeBody: () => ({ allowed: true }), admitsBody: () => true, handOn },
      ready: () => true,
      observe,
    } as unknown as ShortcutContext;
    const shortcut = registerShortcut(context, {
      bodyLimit: 1_024,
      parseJson: (text) => JSON.parse(text),
      fits: () => true,
      register,
      answer: (result) => JSON.stringify({ created: result.created }),
    });
    const taken = shortcut(raw, res, handBack);
    return { raw, res, taken, written, handedBack, writeFailures, handOn, observe };
  }

  const created = { entry: {}, created: true } as unknown as RegisterResult;

  it('hands back a request whose body stream fails, once, with the error, and answers nothing', () => {
    const register = vi.fn(() => created);
    const { raw, taken, written, handedBack, handOn } = harness(register as never);
    expect(taken).toBe(true);
    raw.write('{');
    const failure = new Error('aborted');
    raw.emit('error', failure);
    raw.emit('error', new Error('again'));
    raw.emit('end');
    expect(handedBack).toEqual([failure]);
    expect(handOn).toHaveBeenCalledTimes(1);
    expect(written).toEqual([]);
    expect(register).not.toHaveBeenCalled();
  });

  it('answers and times nothing when the client went away while the durability barrier waited', async () => {
    let passBarrier: ((result: RegisterResult) => void) | undefined;
    const waiting = harness((() => new Promise<RegisterResult>((resolve) => (passBarrier = resolve))) as never);
    waiting.raw.end('{}');
    await vi.waitFor(() => expect(passBarrier).toBeDefined());
    await expectNothingOnceClientLeft(waiting, () => passBarrier!(created));
  });

  it('hands back a registration its write refuses, with the body and the refusal for the route to answer', async () => {
    const refusal = new Error('quota');
    const refused = harness(() => {
      throw refusal;
    });
    refused.raw.end('{}');
    await vi.waitFor(() => expect(refused.handedBack).toEqual([Buffer.from('{}')]));
    expect(refused.writeFailures).toEqual([refusal]);
    expect(refused.handOn).toHaveBeenCalledTimes(1);
    expect(refused.written).toEqual([]);
  });

  it('answers once the durability barrier is passed, and hands back when it fails', async () => {
    const passed = harness((() => Promise.resolve(created)) as never);
    passed.raw.end('{}');
    await vi.waitFor(() => expect(passed.written).toEqual([{ status: 201, body: '{"created":true}' }]));
    expect(passed.handedBack).toEqual([]);

    const failure = new Error('fsync failed');
    const failed = harness((() => Promise.reject(failure)) as never);
    failed.raw.end('{}');
    await vi.waitFor(() => expect(failed.handedBack).toEqual([Buffer.from('{}')]));
    // With the failure, which the route answers rather than writing again.
    expect(failed.writeFailures).toEqual([failure]);
    expect(failed.written).toEqual([]);
    // A stream error after that is not a second hand-back.
    failed.raw.emit('error', new Error('late'));
    expect(failed.handedBack).toHaveLength(1);
  });
});
