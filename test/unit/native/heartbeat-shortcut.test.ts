import type { IncomingMessage } from 'node:http';
import type { InjectOptions } from 'light-my-request';
import { describe, expect, it, vi } from 'vitest';
import type { ShortcutContext } from '../../../src/http/front-door.js';
import { heartbeatShortcut, type HeartbeatShortcutDeps } from '../../../src/native/heartbeat-shortcut.js';
import type { StoredInstance } from '../../../src/registry/types.js';
import { both, doorOf, doorsClosedAfterEach, listing, seen, shortcutOutcome, expectNothingOnceClientLeft, type Door, type Twins } from '../../support/front-door.js';
import { simulatedDisk, startDurablePeer } from '../../support/durable-node.js';
import { record } from '../../support/records.js';
import { bearer, securedFile, TOKENS } from '../../support/security.js';

/**
 * The heartbeat route's shortcut (src/native/heartbeat-shortcut.ts). Two peers alike get the
 * same requests, one through its front door and the other straight to fastify: every answer
 * must be the same, byte for byte but for the `Date` header, whether the shortcut answered it
 * or handed it on, and the two registries must hold the same leases.
 */

const doors = doorsClosedAfterEach();

const beat = (id: string, extra: Partial<InjectOptions> = {}): InjectOptions => ({
  method: 'PUT',
  url: `/v1/services/orders/instances/${id}/heartbeat`,
  ...extra,
});

/** Registers `ids` on both twins, straight through fastify. */
async function registered(twin: Twins, ids: string[], namespace = 'default', headers: Record<string, string> = {}): Promise<void> {
  for (const door of [twin.through, twin.direct]) {
    for (const instanceId of ids) {
      const answer = await door.app.inject({
        method: 'POST',
        url: `/v1/instances?namespace=${namespace}`,
        headers,
        payload: { service: 'orders', instanceId, host: '10.0.0.1', port: 8080 },
      });
      expect(answer.statusCode).toBe(201);
    }
  }
}

async function sameListings(twin: Twins, namespaces = ['default']): Promise<void> {
  for (const namespace of namespaces) expect(await listing(twin.through, 'orders', namespace)).toEqual(await listing(twin.direct, 'orders', namespace));
}

describe('the heartbeat shortcut', () => {
  it('answers heartbeats of known instances itself, as fastify does, and renews the same leases', async () => {
    const twin = await doors.twins();
    await registered(twin, ['i-1', 'i-2.b:c@d']);
    await registered(twin, ['i-3'], 'team-a');
    const taken = [
      beat('i-1'),
      beat('i-1', { headers: { 'content-length': '0' } }),
      beat('i-2.b:c@d'),
      beat('i-3', { url: '/v1/services/orders/instances/i-3/heartbeat?namespace=team-a' }),
      beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?' }),
      beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?namespace=default&client=java' }),
      beat('i-1', { headers: { 'user-agent': 'registry-client/1.0', connection: 'keep-alive' } }),
    ];
    for (const request of taken) {
      const answer = await both(twin, request);
      expect(answer, request.url as string).toEqual({ status: 200, fastify: false });
    }
    await sameListings(twin, ['default', 'team-a']);
  });

  it('leaves to fastify, untouched, what it does not answer: unknown instances, bad names, bodies, encoded paths, other routes', async () => {
    const twin = await doors.twins();
    await registered(twin, ['i-1']);
    const untaken: [InjectOptions, number][] = [
      [beat('nobody'), 404],
      [beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?namespace=team-a' }), 404],
      [beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?namespace=-bad' }), 400],
      [beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?namespace=a&namespace=b' }), 400],
      [beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?namespace=' }), 400],
      [beat('i-1', { url: `/v1/services/orders/instances/${'i'.repeat(257)}/heartbeat` }), 400],
      [beat('i-1', { url: `/v1/services/${'s'.repeat(300)}/instances/i-1/heartbeat` }), 400],
      [beat('i-1', { url: '/v1/services/-orders/instances/i-1/heartbeat' }), 400],
      [beat('i-1', { url: '/v1/services/orders/instances/i%201/heartbeat' }), 400],
      [beat('i-1', { url: '/v1/services/orders/instances/i%2D1/heartbeat' }), 200],
      [beat('i-1', { url: '/v1/services/or%64ers/instances/i-1/heartbeat' }), 200],
      [beat('i-1', { url: '/v1/services/orders/instances/i-1;x/heartbeat' }), 404],
      [beat('i-1', { headers: { 'content-type': 'application/json' }, payload: '{}' }), 200],
      [beat('i-1', { headers: { 'content-type': 'application/json' }, payload: '{' }), 400],
      [beat('i-1', { payload: 'x' }), 415],
      [beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat/' }), 404],
      [beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeatX' }), 404],
      [beat('i-1', { url: '/v1/services/orders/instances//heartbeat' }), 400],
      [beat('i-1', { method: 'POST' }), 405],
      [{ method: 'PUT', url: '/v1/services/orders/instances/i-1/status', headers: { 'content-type': 'application/json' }, payload: '{"status":"DOWN"}' }, 200],
      // A dev peer on loopback takes only its own names as Host (DNS rebinding).
      [beat('i-1', { headers: { host: 'rebound.example' } }), 403],
    ];
    for (const [request, status] of untaken) {
      const answer = await both(twin, request);
      expect(answer, `${request.method} ${request.url} ${JSON.stringify(request.headers)}`).toEqual({ status, fastify: true });
    }
    await sameListings(twin);
  });

  it('counts a heartbeat of an unknown instance once in registry_heartbeats_total', async () => {
    const door = await doors.open();
    await door.door(beat('nobody'));
    await door.door(beat('nobody'));
    const metrics = (await door.app.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/registry_heartbeats_total\{[^}]*outcome="unknown"[^}]*\} 2\n/);
  });

  it('answers a takeover whose durability barrier fails as fastify does (503), and does not renew it a second time', async () => {
    const outcome = async (throughTheDoor: boolean) => {
      const { clock, disk } = simulatedDisk();
      const peer = await startDurablePeer(disk, clock, { storage: { syncPolicy: 'always' } });
      // Owned by a peer this one does not hear: its heartbeat here takes it over, a write.
      peer.node.registry.applyRemote(record({ wallMs: clock.nowMs(), peerId: 'peer-x', instanceId: 'i-1' }), 30_000);
      disk.syncFault = 'EIO';
      const door = doorOf(peer.app);
      const answer = throughTheDoor ? await door.door(beat('i-1')) : await peer.app.inject(beat('i-1'));
      const metrics = (await peer.app.inject({ url: '/metrics' })).body;
      const count = (outcome: string) => Number(new RegExp(`registry_heartbeats_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`).exec(metrics)?.[1]);
      await peer.node.stop();
      await peer.app.close();
      return { answer: seen(answer), takeover: count('takeover'), renewed: count('renewed'), fastify: door.fastifySaw.length > 0 };
    };
    const through = await outcome(true);
    const direct = await outcome(false);
    expect(through.answer.status).toBe(503);
    expect(JSON.parse(through.answer.body).code).toBe('REG_ERR_STORAGE');
    expect({ ...through, fastify: undefined }).toEqual({ ...direct, fastify: undefined });
    expect(through).toMatchObject({ takeover: 1, renewed: 0, fastify: true });
  });

  it('is fastify on a peer that is not ready: 503', async () => {
    const door = await doors.open({ start: false });
    const answer = await door.door(beat('i-1'));
    expect(answer.statusCode).toBe(503);
    expect(answer.json().code).toBe('REG_ERR_NOT_READY');
    expect(door.fastifySaw).toEqual(['/v1/services/orders/instances/i-1/heartbeat']);
  });

  it('leaves the answers of a peer that is not ready to fastify, whatever the token may do (503 before a namespace refusal)', async () => {
    const twin = await doors.twins({ file: securedFile(), start: false });
    const cases: InjectOptions[] = [
      beat('i-1', { headers: bearer(TOKENS.writer) }),
      beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?namespace=team-a', headers: bearer(TOKENS.writer) }),
      beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?namespace=team-a', headers: bearer(TOKENS.reader) }),
      beat('i-1'),
    ];
    const statuses: number[] = [];
    for (const request of cases) statuses.push((await both(twin, request)).status);
    expect(statuses).toEqual([503, 503, 403, 401]);
  });

  it('takes what the token may write, and hands on the refusals with the answers fastify gives', async () => {
    const twin = await doors.twins({ file: securedFile() });
    await registered(twin, ['i-1'], 'team-a', bearer(TOKENS.root));
    await registered(twin, ['i-2'], 'team-b', bearer(TOKENS.root));
    const teamA = (headers: Record<string, string>) => beat('i-1', { url: '/v1/services/orders/instances/i-1/heartbeat?namespace=team-a', headers });
    const cases: [InjectOptions, number, boolean][] = [
      [teamA(bearer(TOKENS.writer)), 200, false],
      [beat('i-2', { url: '/v1/services/orders/instances/i-2/heartbeat?namespace=team-b', headers: bearer(TOKENS.otherTeam) }), 200, false],
      [teamA({}), 401, true],
      [teamA(bearer('not-a-token-at-all-000000')), 401, true],
      [teamA(bearer(TOKENS.reader)), 403, true],
      [teamA(bearer(TOKENS.otherTeam)), 403, true],
      [beat('i-2', { url: '/v1/services/orders/instances/i-2/heartbeat?namespace=team-b', headers: bearer(TOKENS.writer) }), 403, true],
    ];
    for (const [request, status, handedOn] of cases) {
      const answer = await both(twin, request);
      expect(answer, `${request.url} ${JSON.stringify(request.headers)}`).toEqual({ status, fastify: handedOn });
    }
  });

  it('counts a heartbeat once against its rate limit, answered or handed on', async () => {
    const door = await doors.open({ file: { limits: { rateLimitPerSecond: 1, rateLimitBurst: 5 } } });
    await door.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', instanceId: 'i-1', host: '10.0.0.1', port: 80 } });
    const from = (request: InjectOptions) => ({ ...request, remoteAddress: '10.0.0.7' });
    const statuses: number[] = [];
    for (const request of [beat('i-1'), beat('nobody'), beat('i-1'), beat('nobody'), beat('i-1'), beat('i-1'), beat('nobody')]) {
      statuses.push((await door.door(from(request))).statusCode);
    }
    expect(statuses).toEqual([200, 404, 200, 404, 200, 429, 429]);
  });

  it('times the heartbeats it answers into the HTTP latency histogram, under the route and status', async () => {
    const door: Door = await doors.open();
    await door.app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', instanceId: 'i-1', host: '10.0.0.1', port: 80 } });
    for (let i = 0; i < 3; i++) await door.door(beat('i-1'));
    expect(door.fastifySaw).toEqual([]);
    const metrics = (await door.app.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/registry_http_request_duration_seconds_count\{method="PUT",route="\/v1\/services\/:service\/instances\/:id\/heartbeat",status_code="200"\} 3\n/);
  });
});

describe('the heartbeat shortcut, on its own', () => {
  function harness(heartbeat: HeartbeatShortcutDeps['heartbeat']) {
    const raw = { method: 'PUT', url: '/v1/services/orders/instances/i-1/heartbeat', headers: {} } as unknown as IncomingMessage;
    const { res, written, handedBack, writeFailures, handBack, handOn } = shortcutOutcome();
    const observe = vi.fn();
    const context = { guard: { admit: () => ({ allowed: true }), handOn }, ready: () => true, observe } as unknown as ShortcutContext;
    const shortcut = heartbeatShortcut(context, {
      key: (service, instanceId) => ({ namespace: 'default', service, instanceId }),
      heartbeat,
      answer: () => '{"renewed":true}',
    });
    const taken = shortcut(raw, res, handBack);
    return { res, taken, written, handedBack, writeFailures, handOn, observe };
  }

  const entry = {} as StoredInstance;

  it('answers and times nothing when the client went away while a takeover was made durable', async () => {
    let passBarrier: ((renewed: StoredInstance) => void) | undefined;
    const waiting = harness((() => new Promise<StoredInstance>((resolve) => (passBarrier = resolve))) as never);
    expect(waiting.taken).toBe(true);
    await expectNothingOnceClientLeft(waiting, () => passBarrier!(entry));
  });

  it('answers once the durability barrier is passed, and hands the request to fastify when it fails', async () => {
    const passed = harness((() => Promise.resolve(entry)) as never);
    expect(passed.taken).toBe(true);
    await vi.waitFor(() => expect(passed.written).toEqual([{ status: 200, body: '{"renewed":true}' }]));
    expect(passed.handedBack).toEqual([]);

    const failure = new Error('fsync failed');
    const failed = harness((() => Promise.reject(failure)) as never);
    expect(failed.taken).toBe(true);
    await vi.waitFor(() => expect(failed.handedBack).toEqual([Buffer.alloc(0)]));
    expect(failed.writeFailures).toEqual([failure]);
    expect(failed.handOn).toHaveBeenCalledTimes(1);
    expect(failed.written).toEqual([]);
  });

  it('hands a heartbeat whose write throws to fastify, counted once, with the error for the route to answer', () => {
    const boom = new Error('boom');
    const thrown = harness(() => {
      throw boom;
    });
    expect(thrown.taken).toBe(true);
    expect(thrown.handOn).toHaveBeenCalledTimes(1);
    expect(thrown.handedBack).toEqual([Buffer.alloc(0)]);
    expect(thrown.writeFailures).toEqual([boom]);
    expect(thrown.written).toEqual([]);
  });
});
