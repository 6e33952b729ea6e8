import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { PIECE_BYTES } from '../../../src/http/paced-body.js';
import { PARTIAL_WINDOW_HASH_CODE } from '../../../src/eureka/recent-changes.js';
import { turnsWhile } from '../../support/loop-turns.js';
import { createTestServer, type TestServer } from '../../support/server.js';
import { DEFAULT_CLASS, javaClientBody, jsClientBody } from './fixtures.js';

let server: TestServer;
afterEach(async () => server?.app.close());

const JSON_ACCEPT = { accept: 'application/json' };
const T0 = Date.UTC(2026, 0, 1);

/** The instance of jsClientBody() as Eureka writes it, registered at T0 (fields in Eureka's order). */
function goldenInstance(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    instanceId: 'orders-1.local',
    hostName: 'orders-1.local',
    app: 'ORDERS',
    ipAddr: '10.0.0.1',
    status: 'UP',
    overriddenStatus: 'UNKNOWN',
    port: { $: 8080, '@enabled': 'true' },
    securePort: { $: 443, '@enabled': 'false' },
    countryId: 1,
    dataCenterInfo: { '@class': DEFAULT_CLASS, name: 'MyOwn' },
    leaseInfo: {
      renewalIntervalInSecs: 30,
      durationInSecs: 90,
      registrationTimestamp: T0,
      lastRenewalTimestamp: T0,
      evictionTimestamp: 0,
      serviceUpTimestamp: T0,
    },
    metadata: { '@class': 'java.util.Collections$EmptyMap' },
    vipAddress: 'orders.vip',
    isCoordinatingDiscoveryServer: 'false',
    lastUpdatedTimestamp: String(T0),
    lastDirtyTimestamp: String(T0),
    actionType: 'ADDED',
    ...overrides,
  };
}

async function setup(file: Record<string, unknown> = {}) {
  server = await createTestServer({ file });
  const { app } = server;
  const register = (prefix: string, body: unknown, app_ = 'orders', headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: `${prefix}/apps/${app_}`, payload: body as object, headers });
  const getJson = async (url: string) => {
    const response = await app.inject({ url, headers: JSON_ACCEPT });
    return { status: response.statusCode, body: response.body === '' ? undefined : response.json() };
  };
  return { ...server, register, getJson };
}

describe.each(['/eureka/v2', '/eureka'])('under %s', (prefix) => {
  it('registers with 204 and lists the instance at once, in Eureka JSON (golden)', async () => {
    const { register, getJson } = await setup();
    const registered = await register(prefix, jsClientBody());
    expect(registered.statusCode).toBe(204);
    expect(registered.body).toBe('');
    const { status, body } = await getJson(`${prefix}/apps`);
    expect(status).toBe(200);
    const expectedInstance = goldenInstance();
    expect(body).toEqual({
      applications: {
        versions__delta: '1',
        apps__hashcode: 'UP_1_',
        application: [{ name: 'ORDERS', instance: [expectedInstance] }],
      },
    });
    // Field order as Eureka's codec writes it.
    expect(Object.keys(body.applications.application[0].instance[0])).toEqual(Object.keys(expectedInstance));
    // eureka-js-client fetches `<servicePath>` with its trailing slash.
    expect((await getJson(`${prefix}/apps/`)).body).toEqual(body);
  });

  it('answers XML when Accept does not ask for JSON (golden)', async () => {
    const { app, register } = await setup();
    await register(prefix, jsClientBody({ metadata: { version: '1.2' } }));
    const response = await app.inject({ url: `${prefix}/apps/ORDERS/orders-1.local` });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/xml/);
    expect(response.body).toBe(
      '<instance><instanceId>orders-1.local</instanceId><hostName>orders-1.local</hostName><app>ORDERS</app>' +
        '<ipAddr>10.0.0.1</ipAddr><status>UP</status><overriddenstatus>UNKNOWN</overriddenstatus>' +
        '<port enabled="true">8080</port><securePort enabled="false">443</securePort><countryId>1</countryId>' +
        `<dataCenterInfo class="${DEFAULT_CLASS}"><name>MyOwn</name></dataCenterInfo>` +
        '<leaseInfo><renewalIntervalInSecs>30</renewalIntervalInSecs><durationInSecs>90</durationInSecs>' +
        `<registrationTimestamp>${T0}</registrationTimestamp><lastRenewalTimestamp>${T0}</lastRenewalTimestamp>` +
        `<evictionTimestamp>0</evictionTimestamp><serviceUpTimestamp>${T0}</serviceUpTimestamp></leaseInfo>` +
        '<metadata><version>1.2</version></metadata><vipAddress>orders.vip</vipAddress>' +
        '<isCoordinatingDiscoveryServer>false</isCoordinatingDiscoveryServer>' +
        `<lastUpdatedTimestamp>${T0}</lastUpdatedTimestamp><lastDirtyTimestamp>${T0}</lastDirtyTimestamp>` +
        '<actionType>ADDED</actionType></instance>',
    );
    const registry = await app.inject({ url: `${prefix}/apps` });
    expect(registry.body).toMatch(
      /^<applications><versions__delta>1<\/versions__delta><apps__hashcode>UP_1_<\/apps__hashcode><application><name>ORDERS<\/name><instance>/,
    );
  });

  it('takes an XML register body', async () => {
    const { register, getJson } = await setup();
    const xml =
      '<instance><instanceId>x:1</instanceId><hostName>x.local</hostName><app>ORDERS</app><ipAddr>10.0.0.9</ipAddr>' +
      '<status>UP</status><overriddenstatus>UNKNOWN</overriddenstatus><port enabled="true">9000</port>' +
      '<securePort enabled="false">443</securePort>' +
      `<dataCenterInfo class="${DEFAULT_CLASS}"><name>MyOwn</name></dataCenterInfo>` +
      '<leaseInfo><durationInSecs>30</durationInSecs></leaseInfo>' +
      '<metadata><my__key>v</my__key></metadata><lastDirtyTimestamp>1234</lastDirtyTimestamp></instance>';
    expect((await register(prefix, xml, 'orders', { 'content-type': 'application/xml' })).statusCode).toBe(204);
    const { body } = await getJson(`${prefix}/apps/orders/x:1`);
    expect(body.instance).toMatchObject({
      port: { $: 9000, '@enabled': 'true' },
      metadata: { my_key: 'v' },
      lastDirtyTimestamp: '1234',
      leaseInfo: { durationInSecs: 30 },
    });
  });

  it('finds apps and instances in any case, and answers unknown ones with an empty 404', async () => {
    const { app, register, getJson } = await setup();
    await register(prefix, jsClientBody());
    expect((await getJson(`${prefix}/apps/Orders`)).body.application.name).toBe('ORDERS');
    expect((await getJson(`${prefix}/apps/orders/orders-1.local`)).body.instance.instanceId).toBe('orders-1.local');
    expect((await getJson(`${prefix}/instances/orders-1.local`)).body.instance.app).toBe('ORDERS');
    for (const url of [`${prefix}/apps/billing`, `${prefix}/apps/orders/nope`, `${prefix}/instances/nope`]) {
      const response = await app.inject({ url, headers: JSON_ACCEPT });
      expect(response.statusCode, url).toBe(404);
      expect(response.body, url).toBe('');
    }
  });

  it('heartbeats with 200, answers 404 for an unknown instance, and 404 after a cancel', async () => {
    const { app, register, clock } = await setup();
    await register(prefix, jsClientBody());
    await clock.advance(60_000);
    const beat = await app.inject({ method: 'PUT', url: `${prefix}/apps/ORDERS/orders-1.local` });
    expect(beat.statusCode).toBe(200);
    expect(beat.body).toBe('');
    // The lease (90 s) runs from the heartbeat: still live 80 s later.
    await clock.advance(80_000);
    expect((await app.inject({ url: `${prefix}/apps/orders/orders-1.local` })).statusCode).toBe(200);
    const unknown = await app.inject({ method: 'PUT', url: `${prefix}/apps/ORDERS/other` });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toBe('');
    const cancelled = await app.inject({ method: 'DELETE', url: `${prefix}/apps/orders/orders-1.local` });
    expect(cancelled.statusCode).toBe(200);
    expect((await app.inject({ method: 'DELETE', url: `${prefix}/apps/orders/orders-1.local` })).statusCode).toBe(404);
    expect((await app.inject({ method: 'PUT', url: `${prefix}/apps/ORDERS/orders-1.local` })).statusCode).toBe(404);
    expect((await app.inject({ url: '/v1/services/ORDERS' })).json().instances).toEqual([]);
  });

  it('accepts a bodiless heartbeat whatever content type it claims', async () => {
    const { app, register } = await setup();
    await register(prefix, jsClientBody());
    for (const type of ['application/json', 'application/x-www-form-urlencoded', 'text/plain']) {
      const response = await app.inject({ method: 'PUT', url: `${prefix}/apps/ORDERS/orders-1.local`, headers: { 'content-type': type } });
      expect(response.statusCode, type).toBe(200);
    }
  });

  it('answers a heartbeat 404 when the client holds newer data, so that it registers again', async () => {
    const { app, register } = await setup();
    await register(prefix, javaClientBody());
    const url = `${prefix}/apps/ORDERS/orders-1.local:orders:8080`;
    expect((await app.inject({ method: 'PUT', url: `${url}?status=UP&lastDirtyTimestamp=1767225500000` })).statusCode).toBe(200);
    expect((await app.inject({ method: 'PUT', url: `${url}?status=UP&lastDirtyTimestamp=1767225400000` })).statusCode).toBe(200);
    expect((await app.inject({ method: 'PUT', url: `${url}?status=UP&lastDirtyTimestamp=1767225600000` })).statusCode).toBe(404);
    // The client registers again with its newer data; the heartbeat then passes.
    await register(prefix, javaClientBody({ lastDirtyTimestamp: '1767225600000', metadata: { v: '2' } }));
    expect((await app.inject({ method: 'PUT', url: `${url}?status=UP&lastDirtyTimestamp=1767225600000` })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/services/ORDERS' })).json().instances[0].metadata).toEqual({ v: '2' });
  });

  it('applies a status the client reports in its heartbeat, by the rules', async () => {
    const { app, register, getJson } = await setup();
    await register(prefix, javaClientBody());
    const url = `${prefix}/apps/ORDERS/orders-1.local:orders:8080`;
    expect((await app.inject({ method: 'PUT', url: `${url}?status=DOWN` })).statusCode).toBe(200);
    expect((await getJson(url)).body.instance.status).toBe('DOWN');
    expect((await app.inject({ method: 'PUT', url: `${url}?status=UP` })).statusCode).toBe(200);
    expect((await getJson(url)).body.instance.status).toBe('UP');
  });

  it('overrides a status, keeps the override over re-registration, and removes it', async () => {
    const { app, register, getJson } = await setup();
    await register(prefix, jsClientBody());
    const url = `${prefix}/apps/orders/orders-1.local`;
    expect((await app.inject({ method: 'PUT', url: `${url}/status?value=OUT_OF_SERVICE` })).statusCode).toBe(200);
    expect((await getJson(url)).body.instance).toMatchObject({ status: 'OUT_OF_SERVICE', overriddenStatus: 'OUT_OF_SERVICE' });
    expect((await app.inject({ url: '/v1/services/ORDERS' })).json().instances).toEqual([]);
    // The client registers again, saying UP: the override wins (rule 2).
    await register(prefix, jsClientBody());
    expect((await getJson(url)).body.instance.status).toBe('OUT_OF_SERVICE');
    // A failing client still goes DOWN (rule 1).
    await register(prefix, jsClientBody({ status: 'DOWN' }));
    expect((await getJson(url)).body.instance.status).toBe('DOWN');
    expect((await app.inject({ method: 'DELETE', url: `${url}/status?value=UP` })).statusCode).toBe(200);
    expect((await getJson(url)).body.instance).toMatchObject({ status: 'UP', overriddenStatus: 'UNKNOWN' });
    // Without a value, the status becomes what the client last reported (DOWN here).
    await app.inject({ method: 'PUT', url: `${url}/status?value=OUT_OF_SERVICE` });
    await app.inject({ method: 'DELETE', url: `${url}/status` });
    expect((await getJson(url)).body.instance).toMatchObject({ status: 'DOWN', overriddenStatus: 'UNKNOWN' });
  });

  it('refuses bad status changes with 400 and changes nothing; unknown instances are 404', async () => {
    const { app, register, node } = await setup();
    await register(prefix, jsClientBody());
    const revision = node.store.revision;
    const url = `${prefix}/apps/orders/orders-1.local/status`;
    for (const query of ['', '?value=ASLEEP', '?value=UNKNOWN', '?value=UP&lastDirtyTimestamp=soon']) {
      const response = await app.inject({ method: 'PUT', url: `${url}${query}` });
      expect(response.statusCode, query).toBe(400);
      expect(response.json().code).toBe('REG_ERR_VALIDATION');
    }
    expect((await app.inject({ method: 'DELETE', url: `${url}?value=nope` })).statusCode).toBe(400);
    expect(node.store.revision).toBe(revision);
    expect((await app.inject({ method: 'PUT', url: `${prefix}/apps/orders/x/status?value=UP` })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: `${prefix}/apps/orders/x/status` })).statusCode).toBe(404);
  });

  it('adds and replaces metadata, within the limits', async () => {
    const { app, register, getJson, node } = await setup();
    await register(prefix, jsClientBody({ metadata: { a: '1', b: '2' } }));
    const url = `${prefix}/apps/orders/orders-1.local`;
    expect((await app.inject({ method: 'PUT', url: `${url}/metadata?b=3&c=4` })).statusCode).toBe(200);
    expect((await getJson(url)).body.instance.metadata).toEqual({ a: '1', b: '3', c: '4' });
    const revision = node.store.revision;
    const tooLong = await app.inject({ method: 'PUT', url: `${url}/metadata?d=${'x'.repeat(600)}` });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json().message).toMatch(/^metadata\.d:/);
    expect(node.store.revision).toBe(revision);
    expect((await app.inject({ method: 'PUT', url: `${prefix}/apps/orders/nope/metadata?a=1` })).statusCode).toBe(404);
  });

  it('lists instances by VIP and secure VIP address', async () => {
    const { register, getJson } = await setup();
    await register(prefix, jsClientBody({ vipAddress: 'orders.vip,shop.vip', secureVipAddress: 'orders.secure' }));
    await register(prefix, jsClientBody({ app: 'billing', hostName: 'billing-1.local', vipAddress: 'billing.vip' }), 'billing');
    const vip = await getJson(`${prefix}/vips/shop.vip`);
    expect(vip.status).toBe(200);
    expect(vip.body.applications.application.map((a: { name: string }) => a.name)).toEqual(['ORDERS']);
    expect(vip.body.applications.apps__hashcode).toBe('UP_1_');
    expect((await getJson(`${prefix}/vips/BILLING.VIP`)).body.applications.application[0].name).toBe('BILLING');
    expect((await getJson(`${prefix}/svips/orders.secure`)).body.applications.application).toHaveLength(1);
    expect((await getJson(`${prefix}/vips/none.vip`)).body).toEqual({
      applications: { versions__delta: '-1', apps__hashcode: '', application: [] },
    });
  });

  it('answers a VIP read as a full fetch is answered: its length, gzip when accepted, XML when asked, HEAD without a body', async () => {
    const { app, register } = await setup();
    await register(prefix, jsClientBody({ vipAddress: 'orders.vip' }));
    const url = `${prefix}/vips/orders.vip`;
    const plain = await app.inject({ method: 'GET', url, headers: { accept: 'application/json' } });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toMatch(/^application\/json/);
    expect(plain.headers.vary).toMatch(/accept-encoding/i);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(Number(plain.headers['content-length'])).toBe(plain.rawPayload.length);
    const zipped = await app.inject({ method: 'GET', url, headers: { accept: 'application/json', 'accept-encoding': 'gzip' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(Number(zipped.headers['content-length'])).toBe(zipped.rawPayload.length);
    expect(gunzipSync(zipped.rawPayload).toString()).toBe(plain.body);
    const xml = await app.inject({ method: 'GET', url, headers: { accept: 'application/xml' } });
    expect(xml.headers['content-type']).toMatch(/^application\/xml/);
    expect(xml.body).toMatch(/^<applications><versions__delta>-1<\/versions__delta>.*<application><name>ORDERS<\/name>/);
    const head = await app.inject({ method: 'HEAD', url, headers: { accept: 'application/json' } });
    expect(head.statusCode).toBe(200);
    expect(head.rawPayload.length).toBe(0);
  });
});

describe('one record for /v1 and Eureka', () => {
  it('lists a /v1 instance under its upper-cased service name with Eureka defaults (golden)', async () => {
    const { app, getJson } = await setup();
    await app.inject({
      method: 'POST',
      url: '/v1/instances',
      payload: { service: 'orders', host: '10.0.0.5', port: 8080, securePort: 8443, metadata: { v: '1' } },
    });
    const { body } = await getJson('/eureka/apps/ORDERS');
    expect(body.application.instance[0]).toEqual(
      goldenInstance({
        instanceId: '10.0.0.5:8080',
        hostName: '10.0.0.5',
        ipAddr: '10.0.0.5',
        securePort: { $: 8443, '@enabled': 'true' },
        // A /v1 instance: the cluster's 30 s lease and 10 s heartbeat, its service as VIP addresses.
        leaseInfo: { ...(goldenInstance().leaseInfo as object), renewalIntervalInSecs: 10, durationInSecs: 30 },
        metadata: { v: '1' },
        vipAddress: 'orders',
        secureVipAddress: 'orders',
      }),
    );
    // A Eureka heartbeat renews it; a Eureka cancel removes it.
    expect((await app.inject({ method: 'PUT', url: '/eureka/v2/apps/orders/10.0.0.5:8080' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'PUT', url: '/eureka/v2/apps/orders/10.0.0.5:8080/status?value=DOWN' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/services/orders?status=all' })).json().instances[0].status).toBe('DOWN');
    expect((await app.inject({ method: 'DELETE', url: '/eureka/apps/ORDERS/10.0.0.5:8080' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/services/orders' })).json().instances).toEqual([]);
  });

  it('lists a Eureka instance through /v1 without its Eureka attributes, and other namespaces not at all', async () => {
    const { app, register, getJson } = await setup();
    await register('/eureka', javaClientBody());
    const listed = (await app.inject({ url: '/v1/services/ORDERS' })).json();
    expect(listed.instances[0]).toMatchObject({ service: 'ORDERS', instanceId: 'orders-1.local:orders:8080', host: 'orders-1.local', port: 8080 });
    expect(listed.instances[0]).not.toHaveProperty('eureka');
    await app.inject({ method: 'POST', url: '/v1/instances?namespace=team-a', payload: { service: 'orders', host: '10.0.0.6', port: 1 } });
    expect((await getJson('/eureka/apps')).body.applications.application[0].instance).toHaveLength(1);
  });

  it('re-registers an id held under another spelling of the service in place', async () => {
    const { app, register } = await setup();
    await app.inject({ method: 'POST', url: '/v1/instances', payload: { service: 'orders', host: '10.0.0.1', port: 8080, instanceId: 'orders-1.local' } });
    expect((await register('/eureka', jsClientBody())).statusCode).toBe(204);
    expect((await app.inject({ url: '/v1/services/orders' })).json().instances).toHaveLength(1);
    // One service whatever the case of its name (CONTRACT.md): ORDERS is the same list.
    expect((await app.inject({ url: '/v1/services/ORDERS' })).json().instances).toHaveLength(1);
  });

  it('writes nothing new when a client registers again unchanged (a lease renewal)', async () => {
    const { register, node, clock } = await setup();
    await register('/eureka', javaClientBody());
    const version = node.store.get({ namespace: 'default', service: 'ORDERS', instanceId: 'orders-1.local:orders:8080' })!.record.version;
    const revision = node.store.revision;
    await clock.advance(10_000);
    await register('/eureka', javaClientBody());
    const again = node.store.get({ namespace: 'default', service: 'ORDERS', instanceId: 'orders-1.local:orders:8080' })!;
    expect(again.record.version).toBe(version);
    expect(node.store.revision).toBe(revision);
    expect(again.leaseExpiresAtMs).toBe(clock.nowMs() + 90_000);
  });

  it('honours the lease a client asks for: an instance that stops heartbeating is evicted', async () => {
    const { app, register, clock } = await setup();
    await register('/eureka', jsClientBody({ leaseInfo: { durationInSecs: 5, renewalIntervalInSecs: 1 } }));
    await clock.advance(4_000);
    expect((await app.inject({ url: '/eureka/apps/ORDERS' })).statusCode).toBe(200);
    await clock.advance(2_000);
    expect((await app.inject({ url: '/eureka/apps/ORDERS' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'PUT', url: '/eureka/apps/ORDERS/orders-1.local' })).statusCode).toBe(404);
  });
});

describe('apps__hashcode', () => {
  it('counts every live instance by status, in status order; empty for no instance', async () => {
    const { app, register, getJson } = await setup();
    expect((await getJson('/eureka/apps')).body.applications).toEqual({ versions__delta: '1', apps__hashcode: '', application: [] });
    for (const [host, status] of [['a.local', 'UP'], ['b.local', 'UP'], ['c.local', 'DOWN'], ['d.local', 'STARTING']]) {
      await register('/eureka', jsClientBody({ hostName: host, status }));
    }
    await register('/eureka', jsClientBody({ app: 'billing', hostName: 'e.local' }), 'billing');
    await app.inject({ method: 'PUT', url: '/eureka/apps/billing/e.local/status?value=OUT_OF_SERVICE' });
    const { body } = await getJson('/eureka/apps');
    expect(body.applications.apps__hashcode).toBe('DOWN_1_OUT_OF_SERVICE_1_STARTING_1_UP_2_');
    expect(body.applications.application.map((a: { name: string }) => a.name)).toEqual(['BILLING', 'ORDERS']);
    expect(body.applications.application[1].instance.map((i: { instanceId: string }) => i.instanceId)).toEqual([
      'a.local',
      'b.local',
      'c.local',
      'd.local',
    ]);
  });
});

describe('GET /eureka/apps/delta', () => {
  it('serves the changes of the window with the whole registry hash code', async () => {
    const { app, register, getJson, clock } = await setup();
    // A client's first fetch: the window records from then on, whole once it has for a window.
    await getJson('/eureka/apps');
    await clock.advance(180_000);
    // Leases longer than the test, so that no eviction adds changes of its own.
    const lease = { leaseInfo: { durationInSecs: 600 } };
    await register('/eureka', jsClientBody({ hostName: 'a.local', ...lease }));
    await clock.advance(60_000);
    await register('/eureka', jsClientBody({ hostName: 'b.local', ...lease }));
    await register('/eureka', jsClientBody({ hostName: 'c.local', ...lease }));
    await app.inject({ method: 'PUT', url: '/eureka/apps/orders/b.local/status?value=OUT_OF_SERVICE' });
    await app.inject({ method: 'DELETE', url: '/eureka/apps/orders/c.local' });
    const delta = (await getJson('/eureka/v2/apps/delta')).body.applications;
    expect(delta.apps__hashcode).toBe('OUT_OF_SERVICE_1_UP_1_');
    expect(delta.apps__hashcode).toBe((await getJson('/eureka/apps')).body.applications.apps__hashcode);
    const actions = Object.fromEntries(
      delta.application[0].instance.map((i: { instanceId: string; actionType: string }) => [i.instanceId, i.actionType]),
    );
    expect(actions).toEqual({ 'a.local': 'ADDED', 'b.local': 'MODIFIED', 'c.local': 'DELETED' });
    // A deleted instance keeps what clients match it by.
    const deleted = delta.application[0].instance.find((i: { instanceId: string }) => i.instanceId === 'c.local');
    expect(deleted).toMatchObject({ hostName: 'c.local', port: { $: 8080 } });
    // Three minutes on, only the later changes remain; then none.
    await clock.advance(150_000);
    const later = (await getJson('/eureka/apps/delta')).body.applications;
    expect(later.application[0].instance.map((i: { instanceId: string }) => i.instanceId).sort()).toEqual(['b.local', 'c.local']);
    await clock.advance(60_000);
    expect((await getJson('/eureka/apps/delta')).body.applications.application).toEqual([]);
  });

  it('includes changes that arrive by replication, and lease expiries', async () => {
    const { node, getJson, register, clock } = await setup({ cluster: { eurekaDeltaWindowMs: 600_000 } });
    await getJson('/eureka/apps');
    await clock.advance(600_000);
    const remote = {
      namespace: 'default',
      service: 'BILLING',
      instanceId: 'b-1',
      data: { host: '10.0.0.7', port: 80, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: {} },
      version: `${(clock.nowMs() + 5).toString(16).padStart(12, '0')}.000000.peer-2`,
      owner: 'peer-2',
      deleted: null,
      leaseDurationMs: 30_000,
      registeredAtMs: clock.nowMs(),
    };
    node.registry.applyRemote(remote, 30_000);
    await register('/eureka', jsClientBody({ leaseInfo: { durationInSecs: 5 } }));
    const delta = (await getJson('/eureka/apps/delta')).body.applications;
    expect(delta.application.map((a: { name: string }) => a.name).sort()).toEqual(['BILLING', 'ORDERS']);
    await clock.advance(6_000);
    const expired = (await getJson('/eureka/apps/delta')).body.applications;
    const orders = expired.application.find((a: { name: string }) => a.name === 'ORDERS');
    expect(orders.instance[0].actionType).toBe('DELETED');
    expect(expired.apps__hashcode).toBe('UP_1_');
  });

  it('holds nothing until a Eureka client reads, and answers a hash code no copy matches until it has recorded for a window', async () => {
    const { register, getJson, clock } = await setup();
    const lease = { leaseInfo: { durationInSecs: 600 } };
    await register('/eureka', jsClientBody({ hostName: 'a.local', ...lease }));
    // A client whose copy came from another peer: its first read here is a delta, which holds
    // nothing of a.local; the hash code sends it to fetch everything.
    const first = (await getJson('/eureka/apps/delta')).body.applications;
    expect(first.application).toEqual([]);
    expect(first.apps__hashcode).toBe(PARTIAL_WINDOW_HASH_CODE);
    await register('/eureka', jsClientBody({ hostName: 'b.local', ...lease }));
    const next = (await getJson('/eureka/apps/delta')).body.applications;
    expect(next.application[0].instance.map((i: { instanceId: string }) => i.instanceId)).toEqual(['b.local']);
    expect(next.apps__hashcode).toBe(PARTIAL_WINDOW_HASH_CODE);
    // A window on: whole, the registry's own hash code.
    await clock.advance(180_000);
    const whole = (await getJson('/eureka/apps/delta')).body.applications;
    expect(whole.apps__hashcode).toBe('UP_2_');
  });

  it('is not started by a read the peer refuses while it is not ready', async () => {
    server = await createTestServer({ start: false });
    const { app, node } = server;
    expect((await app.inject({ url: '/eureka/apps', headers: JSON_ACCEPT })).statusCode).toBe(503);
    await node.start();
    await app.inject({ method: 'POST', url: '/eureka/apps/orders', payload: jsClientBody({ hostName: 'a.local' }) });
    const delta = (await app.inject({ url: '/eureka/apps/delta', headers: JSON_ACCEPT })).json().applications;
    expect(delta.application).toEqual([]);
  });

  it('lets the window go once no Eureka client has read for two windows, and starts it again at the next read', async () => {
    const { register, getJson, clock } = await setup();
    await getJson('/eureka/apps');
    await register('/eureka', jsClientBody({ hostName: 'a.local', leaseInfo: { durationInSecs: 600 } }));
    // Reads every 30 s keep it: a.local is in the delta until it leaves the window.
    for (let i = 0; i < 5; i++) await clock.advance(30_000);
    const kept = (await getJson('/eureka/apps/delta')).body.applications;
    expect(kept.application[0].instance.map((i: { instanceId: string }) => i.instanceId)).toEqual(['a.local']);
    // Six minutes without a read: stopped; a change then is not recorded.
    await clock.advance(360_000);
    await register('/eureka', jsClientBody({ hostName: 'b.local', leaseInfo: { durationInSecs: 600 } }));
    expect((await getJson('/eureka/apps/delta')).body.applications.application).toEqual([]);
    // That read started it again.
    await register('/eureka', jsClientBody({ hostName: 'c.local', leaseInfo: { durationInSecs: 600 } }));
    const again = (await getJson('/eureka/apps/delta')).body.applications;
    expect(again.application[0].instance.map((i: { instanceId: string }) => i.instanceId)).toEqual(['c.local']);
  });

  it('answers XML too', async () => {
    const { app, register, clock } = await setup();
    await app.inject({ url: '/eureka/apps' });
    await clock.advance(180_000);
    await register('/eureka', jsClientBody());
    const response = await app.inject({ url: '/eureka/apps/delta' });
    expect(response.headers['content-type']).toMatch(/^application\/xml/);
    expect(response.body).toMatch(/<apps__hashcode>UP_1_<\/apps__hashcode>.*<actionType>ADDED<\/actionType>/);
  });
});

describe('wire', () => {
  it('gzips answers when asked', async () => {
    const { app, register } = await setup();
    await register('/eureka', jsClientBody());
    const plain = await app.inject({ url: '/eureka/apps', headers: JSON_ACCEPT });
    const zipped = await app.inject({ url: '/eureka/apps', headers: { ...JSON_ACCEPT, 'accept-encoding': 'gzip, deflate' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(zipped.rawPayload).toString()).toBe(plain.body);
    const refused = await app.inject({ url: '/eureka/apps', headers: { ...JSON_ACCEPT, 'accept-encoding': 'gzip;q=0' } });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });

  it('sends a full fetch in pieces spread over turns of the event loop, not in one turn', async () => {
    const { app, node } = await setup();
    for (let i = 0; i < 3_000; i++) {
      node.registry.register({
        namespace: 'default',
        service: `svc-${i % 3}`,
        instanceId: `i-${i}`,
        data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: { k: 'v' } },
        leaseDurationMs: 30_000,
      });
    }
    // A warm-up builds the shared parts: what is counted below is the sending alone.
    const warm = await app.inject({ url: '/eureka/apps', headers: JSON_ACCEPT });
    const { result: response, turns } = await turnsWhile(() => app.inject({ url: '/eureka/apps', headers: JSON_ACCEPT }));
    expect(response.body).toBe(warm.body);
    const pieces = Math.floor(response.rawPayload.length / PIECE_BYTES);
    expect(pieces).toBeGreaterThanOrEqual(4);
    // Streamed from its chunks in microtasks, the whole document went out in one turn.
    expect(turns).toBeGreaterThanOrEqual(pieces);
  });

  it.each([
    ['a body naming another app', jsClientBody({ app: 'billing' }), {}, 400, 'REG_ERR_EUREKA_APP_MISMATCH'],
    ['a body without hostName', jsClientBody({ hostName: undefined }), {}, 400, 'REG_ERR_VALIDATION'],
    ['a body without instance', { app: 'orders' }, {}, 400, 'REG_ERR_VALIDATION'],
    ['broken JSON', '{"instance": ', { 'content-type': 'application/json' }, 400, 'REG_ERR_INVALID_JSON'],
    ['broken XML', '<instance><app>', { 'content-type': 'application/xml' }, 400, 'REG_ERR_INVALID_XML'],
    ['an XML DTD', '<!DOCTYPE a><instance/>', { 'content-type': 'text/xml' }, 400, 'REG_ERR_INVALID_XML'],
    ['a text body', 'app=orders', { 'content-type': 'text/plain' }, 415, 'REG_ERR_UNSUPPORTED_MEDIA_TYPE'],
    ['an empty body', '', { 'content-type': 'application/json' }, 400, 'REG_ERR_VALIDATION'],
    ['a proto key', '{"instance": {"__proto__": {"x": 1}}}', { 'content-type': 'application/json' }, 400, 'REG_ERR_INVALID_JSON'],
  ])('refuses a register with %s, changing nothing', async (_what, payload, headers, status, code) => {
    const { app, node } = await setup();
    const response = await app.inject({ method: 'POST', url: '/eureka/v2/apps/orders', payload: payload as string, headers });
    expect(response.statusCode).toBe(status);
    expect(response.json().code).toBe(code);
    expect(node.store.size).toBe(0);
  });

  it('keeps its XML parser to itself: /v1 still refuses XML', async () => {
    const { app } = await setup();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/instances',
      payload: '<instance/>',
      headers: { 'content-type': 'application/xml' },
    });
    expect(response.statusCode).toBe(415);
  });

  it('refuses a register body over the size limit with 413', async () => {
    const { register, node } = await setup({ limits: { bodyMaxBytes: 2_048 } });
    const response = await register('/eureka', jsClientBody({ metadata: { big: 'x'.repeat(3_000) } }));
    expect(response.statusCode).toBe(413);
    expect(node.store.size).toBe(0);
  });

  it.each([
    ['GET', '/eureka/apps/bad%20app'],
    ['PUT', '/eureka/apps/orders/bad%20id'],
    ['PUT', '/eureka/apps/orders/x?lastDirtyTimestamp=-1'],
    ['PUT', '/eureka/apps/orders/x?status=SLEEPY'],
    ['PUT', '/eureka/apps/orders/x?overriddenstatus=SLEEPY'],
    ['GET', `/eureka/vips/${'v'.repeat(1_100)}`],
  ])('answers %s %s with 400', async (method, url) => {
    const { app } = await setup();
    const response = await app.inject({ method: method as 'GET' | 'PUT', url });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('REG_ERR_VALIDATION');
  });
});

describe('one service whatever the protocol and the case of its name', () => {
  it('lists a Eureka registration of orders in GET /v1/services/orders, and a /v1 registration of Orders as ORDERS', async () => {
    const { app, register, getJson } = await setup();
    expect((await register('/eureka', jsClientBody(), 'orders')).statusCode).toBe(204);
    const v1 = await app.inject({
      method: 'POST',
      url: '/v1/instances',
      payload: { service: 'Orders', host: '10.0.0.2', port: 8080, instanceId: 'v1-instance' },
    });
    expect(v1.statusCode).toBe(201);
    for (const name of ['orders', 'Orders', 'ORDERS']) {
      const listing = (await app.inject({ url: `/v1/services/${name}` })).json();
      expect(listing.instances.map((instance: { instanceId: string }) => instance.instanceId)).toEqual(['orders-1.local', 'v1-instance']);
      expect(new Set(listing.instances.map((instance: { service: string }) => instance.service)).size).toBe(1);
    }
    const services = (await app.inject({ url: '/v1/services' })).json();
    expect(services.services).toHaveLength(1);
    const { body } = await getJson('/eureka/apps');
    expect(body.applications.application).toHaveLength(1);
    expect(body.applications.application[0].name).toBe('ORDERS');
    expect(body.applications.application[0].instance.map((instance: { instanceId: string }) => instance.instanceId).sort()).toEqual([
      'orders-1.local',
      'v1-instance',
    ]);
    const heartbeat = await app.inject({ method: 'PUT', url: '/v1/services/ORDERS/instances/v1-instance/heartbeat' });
    expect(heartbeat.statusCode).toBe(200);
  });
});
