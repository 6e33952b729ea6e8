import { afterEach, describe, expect, it } from 'vitest';
import { serviceRuns, serviceTargetGroups } from '../../../src/prometheus/shared-groups.js';
import { PIECE_BYTES } from '../../../src/http/paced-body.js';
import { PACE_FROM_BYTES } from '../../../src/http/send-chunks.js';
import { encodeTargetGroups, joinTargetGroups, TARGET_GROUPS_ENCODING, type ServiceTargetGroups } from '../../../src/prometheus/target-groups.js';
import { turnsWhile } from '../../support/loop-turns.js';
import { bearer, securedFile, TOKENS } from '../../support/security.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

type Group = { targets: string[]; labels: Record<string, string> };

/** A peer whose zone `eu-1a` is in region `eu`, so instances of that zone get a region. */
const REGIONS = { id: 'peer-1', peers: [{ id: 'peer-1', url: 'http://127.0.0.1:8761', region: 'eu', zone: 'eu-1a' }] };

async function setup(file: Record<string, unknown> = REGIONS) {
  server = await createTestServer({ file });
  const { app } = server;
  const register = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const response = await app.inject({ method: 'POST', url: '/v1/instances', payload: body, headers });
    expect(response.statusCode, response.body).toBe(201);
  };
  const sd = async (query = '', headers: Record<string, string> = {}) => app.inject({ url: `/v1/sd/prometheus${query}`, headers });
  const groups = async (query = '') => {
    const response = await sd(query);
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as Group[];
  };
  const ids = async (query = '') => (await groups(query)).map((group) => group.labels['__meta_registry_instance_id']);
  return { ...server, register, sd, groups, ids };
}

describe('GET /v1/sd/prometheus', () => {
  it('answers an empty list as JSON that Prometheus accepts when nothing is registered', async () => {
    const { sd } = await setup();
    const response = await sd();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body).toBe('[]');
  });

  it('lists one group per UP instance with its labels, services in name order, instances in id order', async () => {
    const { register, groups, node } = await setup();
    await register({ service: 'orders', host: '10.0.0.2', port: 8080, instanceId: 'o-2', zone: 'eu-1a', metadata: { 'prometheus.io/path': '/stats', team: 'shop' } });
    await register({ service: 'orders', host: '10.0.0.1', port: 8080, instanceId: 'o-1', group: 'blue' });
    await register({ service: 'orders', host: '10.0.0.3', port: 8080, instanceId: 'o-3', status: 'DOWN' });
    await register({ service: 'billing', host: '::1', port: 9000, instanceId: 'b-1' });
    await register({ service: 'billing', host: '10.0.0.9', port: 9000, instanceId: 'b-2', namespace: 'team-a' });
    const answer = await groups();
    expect(answer).toEqual([
      {
        targets: ['[::1]:9000'],
        labels: {
          __meta_registry_namespace: 'default',
          __meta_registry_service: 'billing',
          __meta_registry_instance_id: 'b-1',
          __meta_registry_host: '::1',
          __meta_registry_port: '9000',
          __meta_registry_zone: '',
          __meta_registry_region: '',
          __meta_registry_group: 'DEFAULT_GROUP',
          __meta_registry_status: 'UP',
        },
      },
      {
        targets: ['10.0.0.1:8080'],
        labels: expect.objectContaining({ __meta_registry_instance_id: 'o-1', __meta_registry_group: 'blue', __meta_registry_service: 'orders' }),
      },
      {
        targets: ['10.0.0.2:8080'],
        labels: expect.objectContaining({
          __meta_registry_instance_id: 'o-2',
          __meta_registry_zone: 'eu-1a',
          __meta_registry_region: 'eu',
          __meta_registry_metadata_prometheus_io_path: '/stats',
          __meta_registry_metadata_team: 'shop',
        }),
      },
    ]);
    const index = (await server!.app.inject({ url: '/v1/sd/prometheus' })).headers['x-registry-index'];
    expect(index).toBe(String(node.views.revision));
  });

  it('selects a namespace, services, a group and a zone', async () => {
    const { register, ids } = await setup();
    await register({ service: 'orders', host: '10.0.0.1', port: 1, instanceId: 'o-1', zone: 'z1' });
    await register({ service: 'orders', host: '10.0.0.2', port: 1, instanceId: 'o-2', zone: 'z2', group: 'blue' });
    await register({ service: 'billing', host: '10.0.0.3', port: 1, instanceId: 'b-1', zone: 'z1', group: 'blue' });
    await register({ service: 'stock', host: '10.0.0.4', port: 1, instanceId: 's-1' });
    await register({ service: 'orders', host: '10.0.0.5', port: 1, instanceId: 'a-1', namespace: 'team-a' });
    expect(await ids()).toEqual(['b-1', 'o-1', 'o-2', 's-1']);
    expect(await ids('?services=orders,billing')).toEqual(['o-1', 'o-2', 'b-1']);
    expect(await ids('?services=nothing')).toEqual([]);
    expect(await ids('?group=blue')).toEqual(['b-1', 'o-2']);
    expect(await ids('?zone=z1')).toEqual(['b-1', 'o-1']);
    expect(await ids('?zone=z1&group=blue&services=orders,billing')).toEqual(['b-1']);
    expect(await ids('?namespace=team-a')).toEqual(['a-1']);
    expect(await ids('?namespace=nobody')).toEqual([]);
  });

  it('drops an instance once it is cancelled, not UP, or its lease has run out', async () => {
    const { app, register, ids, clock } = await setup();
    await register({ service: 'orders', host: '10.0.0.1', port: 1, instanceId: 'o-1' });
    await register({ service: 'orders', host: '10.0.0.2', port: 1, instanceId: 'o-2' });
    await register({ service: 'orders', host: '10.0.0.3', port: 1, instanceId: 'o-3', leaseDurationMs: 5_000 });
    expect(await ids()).toEqual(['o-1', 'o-2', 'o-3']);
    expect((await app.inject({ method: 'DELETE', url: '/v1/services/orders/instances/o-1' })).statusCode).toBe(200);
    expect(await ids()).toEqual(['o-2', 'o-3']);
    const status = await app.inject({ method: 'PUT', url: '/v1/services/orders/instances/o-2/status', payload: { status: 'OUT_OF_SERVICE' } });
    expect(status.statusCode).toBe(200);
    expect(await ids()).toEqual(['o-3']);
    // o-2 and o-3 get no heartbeat; o-3's 5 s lease runs out first.
    await clock.advance(6_000);
    expect(await ids()).toEqual([]);
  });

  it('builds a service\'s groups once per change and shares them between requests', async () => {
    const { register, ids, node, clock } = await setup();
    await register({ service: 'orders', host: '10.0.0.1', port: 1, instanceId: 'o-1' });
    await ids();
    // What the request built is kept with the service's stable view.
    const kept = () =>
      node.views.stableEncoding<{ built?: { groups: ServiceTargetGroups } }>(node.views.stable('default', 'orders'), TARGET_GROUPS_ENCODING, () => {
        throw new Error('rebuilt although nothing changed');
      }).built!.groups;
    const shared = kept();
    expect(shared.parts).toHaveLength(1);
    await ids('?zone=x');
    expect(kept()).toBe(shared);
    // Past the native views' 1 s bound nothing is rebuilt: target groups carry no countdown.
    await clock.advance(5_000);
    await ids();
    expect(kept()).toBe(shared);
    expect(await serviceTargetGroups(node.views, node.regionOfZone, 'default', 'orders')).toBe(shared);
    await register({ service: 'orders', host: '10.0.0.2', port: 1, instanceId: 'o-2' });
    expect(await ids()).toEqual(['o-1', 'o-2']);
    expect(kept()).not.toBe(shared);
  });

  it('answers 400 {code, message} for a bad parameter, and changes nothing', async () => {
    const { sd, node } = await setup();
    const revision = node.store.revision;
    for (const [query, message] of [
      ['?namespace=bad%20name', 'namespace: must start with a letter or digit'],
      ['?services=orders,bad/name', 'services: must start with a letter or digit'],
      ['?group=', 'group: is required'],
      ['?zone=', 'zone: must be a zone name of 1 to 64 characters'],
      ['?zone=a&zone=b', 'zone: must be given once'],
      ['?service=orders', 'service: is not a parameter of this route'],
    ] as const) {
      const response = await sd(query);
      expect(response.statusCode, query).toBe(400);
      expect(response.json(), query).toEqual({ code: 'REG_ERR_VALIDATION', message: expect.stringContaining(message) });
    }
    expect(node.store.revision).toBe(revision);
  });

  it('answers 503 REG_ERR_NOT_READY with Retry-After until the start-up sync is done', async () => {
    server = await createTestServer({ start: false });
    const response = await server.app.inject({ url: '/v1/sd/prometheus' });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.json().code).toBe('REG_ERR_NOT_READY');
  });
});

describe('GET /v1/sd/prometheus, big answers', () => {
  /** `count` UP instances with metadata over three services, registered straight into the registry. */
  function registerMany(node: TestServer['node'], count: number): void {
    for (let i = 0; i < count; i++) {
      node.registry.register({
        namespace: 'default',
        service: `svc-${i % 3}`,
        instanceId: `i-${String(i).padStart(5, '0')}`,
        data: { host: '10.0.0.1', port: 1 + i, securePort: null, status: 'UP', weight: 1, zone: `z${i % 2}`, metadata: { team: 'shop', 'metrics.path': '/stats' } },
        leaseDurationMs: 30_000,
      });
    }
  }

  /** The answer as the shared parts joined in one buffer (what the route sent before it paced). */
  const joined = (node: TestServer['node'], filter: { group: string | null; zone: string | null }) =>
    joinTargetGroups(['svc-0', 'svc-1', 'svc-2'].map((service) => encodeTargetGroups(node.views.get('default', service))), filter);

  it('sends a big answer in pieces spread over turns of the event loop, with its exact length, the same bytes as one join', async () => {
    const { app, node } = await setup();
    registerMany(node, 3_000);
    const warm = await app.inject({ url: '/v1/sd/prometheus' });
    for (const [query, filter] of [
      ['', { group: null, zone: null }],
      ['?zone=z1', { group: null, zone: 'z1' }],
    ] as const) {
      const { result: response, turns } = await turnsWhile(() => app.inject({ url: `/v1/sd/prometheus${query}` }));
      expect(response.statusCode).toBe(200);
      const expected = joined(node, filter);
      expect(response.rawPayload.equals(expected), query).toBe(true);
      expect(response.headers['content-length']).toBe(String(expected.length));
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect((JSON.parse(response.body) as Group[]).length).toBe(query === '' ? 3_000 : 1_500);
      const pieces = Math.floor(expected.length / PIECE_BYTES);
      expect(pieces, query).toBeGreaterThanOrEqual(2);
      // Sent as one buffer, the whole answer went out in one turn.
      expect(turns, query).toBeGreaterThanOrEqual(pieces);
    }
    expect(warm.rawPayload.equals(joined(node, { group: null, zone: null }))).toBe(true);
  });

  it('sends a small answer as one buffer, with its exact length', async () => {
    const { app, node } = await setup();
    registerMany(node, 30);
    const response = await app.inject({ url: '/v1/sd/prometheus?group=DEFAULT_GROUP' });
    const expected = joined(node, { group: 'DEFAULT_GROUP', zone: null });
    expect(expected.length).toBeLessThan(PACE_FROM_BYTES);
    expect(response.rawPayload.equals(expected)).toBe(true);
    expect(response.headers['content-length']).toBe(String(expected.length));
  });

  it('equals a fresh build from the native views after writes, the end of a lease and time passing', async () => {
    const { app, node, clock } = await setup();
    registerMany(node, 30);
    const fresh = () => joined(node, { group: null, zone: null });
    const check = async () => expect((await app.inject({ url: '/v1/sd/prometheus' })).rawPayload.equals(fresh())).toBe(true);
    await check();
    node.registry.register({
      namespace: 'default',
      service: 'svc-1',
      instanceId: 'short',
      data: { host: '10.0.0.2', port: 9, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
      leaseDurationMs: 2_000,
    });
    await check();
    await clock.advance(1_500);
    await check();
    // The short lease ends: no store change until the reaper runs, yet the next answer drops it.
    await clock.advance(600);
    await check();
    expect((await app.inject({ url: '/v1/sd/prometheus?services=svc-1' })).body).not.toContain('"short"');
    await clock.advance(10_000);
    await check();
  });

  it('keeps what a group or zone filter selects of a service for the next scrapers, until the service changes', async () => {
    const { app, node } = await setup();
    registerMany(node, 12);
    const runs = (zone: string) => serviceRuns(node.views, node.regionOfZone, 'default', 'svc-0', { group: null, zone });
    const first = await app.inject({ url: '/v1/sd/prometheus?zone=z1' });
    const kept = await runs('z1');
    expect(await runs('z1')).toBe(kept);
    expect(await runs('z0')).not.toBe(kept);
    expect((await app.inject({ url: '/v1/sd/prometheus?zone=z1' })).body).toBe(first.body);
    expect(await runs('z1')).toBe(kept);
    registerMany(node, 13);
    expect(await runs('z1')).not.toBe(kept);
    expect((JSON.parse((await app.inject({ url: '/v1/sd/prometheus?zone=z1' })).body) as Group[]).length).toBe(6);
  });

  it('builds a big service in slices that yield to the event loop, once for answers arriving together', async () => {
    const { app, node } = await setup();
    for (let i = 0; i < 6_000; i++) {
      node.registry.register({
        namespace: 'default',
        service: 'big',
        instanceId: `b-${String(i).padStart(5, '0')}`,
        data: { host: '10.0.0.1', port: 1 + i, securePort: null, status: 'UP', weight: 1, zone: '', metadata: { team: 'shop' } },
        leaseDurationMs: 30_000,
      });
    }
    // 6,000 instances take tens of ms to encode: far past the 5 ms a slice may hold the loop.
    const { result, turns } = await turnsWhile(() =>
      Promise.all([serviceTargetGroups(node.views, node.regionOfZone, 'default', 'big'), serviceTargetGroups(node.views, node.regionOfZone, 'default', 'big')]),
    );
    expect(turns).toBeGreaterThanOrEqual(2);
    expect(result[0]).toBe(result[1]);
    expect(result[0].parts).toHaveLength(6_000);
    const answer = await app.inject({ url: '/v1/sd/prometheus?services=big' });
    expect(answer.rawPayload.equals(joinTargetGroups([encodeTargetGroups(node.views.get('default', 'big'))], { group: null, zone: null }))).toBe(true);
  });

  it('rebuilds a service\'s groups when the region of one of its zones changes (membership learned it later)', async () => {
    const { node } = await setup();
    registerMany(node, 4);
    const regions = new Map<string, string>();
    const regionOfZone = (zone: string) => regions.get(zone);
    const regionLabels = async () =>
      (JSON.parse(`[${(await serviceTargetGroups(node.views, regionOfZone, 'default', 'svc-0')).bytes.toString()}]`) as Group[]).map((group) => group.labels['__meta_registry_region']);
    const first = await serviceTargetGroups(node.views, regionOfZone, 'default', 'svc-0');
    expect(await regionLabels()).toEqual(['', '']);
    expect(await serviceTargetGroups(node.views, regionOfZone, 'default', 'svc-0')).toBe(first);
    // svc-0 holds i-00000 (zone z0) and i-00003 (z1): a region for another zone changes nothing.
    regions.set('z7', 'us');
    expect(await serviceTargetGroups(node.views, regionOfZone, 'default', 'svc-0')).toBe(first);
    regions.set('z1', 'eu');
    expect(await regionLabels()).toEqual(['', 'eu']);
  });
});

describe('GET /v1/sd/prometheus with tokens', () => {
  it('takes a token with read on the namespace, as a bearer token', async () => {
    const { sd, register } = await setup(securedFile());
    await register({ service: 'orders', host: '10.0.0.1', port: 1, instanceId: 'o-1', namespace: 'team-a' }, bearer(TOKENS.writer));
    const none = await sd('?namespace=team-a');
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toContain('Bearer');
    expect(none.json()).toEqual({ code: 'REG_ERR_UNAUTHORIZED', message: expect.stringContaining('no credentials') });
    expect((await sd('?namespace=team-a', bearer('not-a-token'))).json().code).toBe('REG_ERR_UNAUTHORIZED');
    // A token without read (admin only), and tokens for another namespace.
    for (const [query, token] of [
      ['?namespace=team-a', TOKENS.admin],
      ['?namespace=team-a', TOKENS.otherTeam],
      ['', TOKENS.reader],
    ] as const) {
      const refused = await sd(query, bearer(token));
      expect(refused.statusCode, `${query} ${token}`).toBe(403);
      expect(refused.json().code).toBe('REG_ERR_FORBIDDEN');
    }
    for (const token of [TOKENS.reader, TOKENS.writer, TOKENS.root]) {
      const allowed = await sd('?namespace=team-a', bearer(token));
      expect(allowed.statusCode, token).toBe(200);
      expect((allowed.json() as Group[]).map((group) => group.targets[0])).toEqual(['10.0.0.1:1']);
    }
  });
});
