import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StoreReader } from '../../../src/app/reads.js';
import { findInApp, registrationKey, servicesOfApp } from '../../../src/eureka/documents.js';
import { NAME_PATTERN } from '../../../src/registry/registration-schema.js';
import { parseName } from '../../../src/registry/validate.js';
import { parseWireRecord } from '../../../src/replication/wire.js';
import { record } from '../../support/records.js';
import { createTestServer, type TestServer } from '../../support/server.js';
import { jsClientBody } from './fixtures.js';

let server: TestServer | undefined;
afterEach(async () => server?.app.close());

const reg = (service: string, instanceId: string, namespace = 'default') => ({
  namespace,
  service,
  instanceId,
  data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: {} },
  leaseDurationMs: 30_000,
});

/** The node's store as the Eureka lookups read it, refusing a walk over every service. */
function noWalk(store: StoreReader): StoreReader {
  return {
    get revision() {
      return store.revision;
    },
    get: (key) => store.get(key),
    getService: (namespace, service) => store.getService(namespace, service),
    allServices: () => {
      throw new Error('walked every service');
    },
    servicesIn: () => {
      throw new Error('walked every service of a namespace');
    },
    onChange: (listener) => store.onChange(listener),
    onPurge: (listener) => store.onPurge(listener),
  };
}

describe('an app and an id found in one lookup', () => {
  it('finds the instance of any spelling of the service, and misses, without a walk over every service', async () => {
    server = await createTestServer();
    const { node } = server;
    node.registry.register(reg('orders', 'o-1'));
    node.registry.register(reg('Billing', 'b-1'));
    node.registry.register(reg('orders', 'o-2', 'team-a'));
    node.registry.register(reg('orders', 'o-gone'));
    node.registry.cancel({ namespace: 'default', service: 'orders', instanceId: 'o-gone' });
    const store = noWalk(node.store);
    expect(findInApp(store, 'default', 'ORDERS', 'o-1')?.record.service).toBe('orders');
    expect(findInApp(store, 'default', 'BILLING', 'b-1')?.record.service).toBe('Billing');
    for (const [app, id] of [
      ['ORDERS', 'nope'],
      ['NOPE', 'o-1'],
      ['ORDERS', 'o-2'],
      ['ORDERS', 'o-gone'],
    ]) {
      expect(findInApp(store, 'default', app!, id!), `${app}/${id}`).toBeUndefined();
    }
    // A registration keeps the spelling of the service holding the id, else the app's.
    expect(registrationKey(store, 'default', 'BILLING', 'b-1').service).toBe('Billing');
    expect(registrationKey(store, 'default', 'BILLING', 'b-2').service).toBe('BILLING');
    expect(servicesOfApp(store, 'default', 'BILLING').map((entries) => entries.service)).toEqual(['Billing']);
    // App names are upper-cased: `billing` names no app (as with the walk).
    expect(servicesOfApp(store, 'default', 'billing')).toEqual([]);
  });

  it('answers every Eureka route of an unknown id, and registers a new one, with no walk over the store', async () => {
    server = await createTestServer();
    const { app, node } = server;
    for (let i = 0; i < 50; i++) node.registry.register(reg(`svc-${i}`, `i-${i}`));
    node.registry.register(reg('orders', 'v1-instance'));
    const walks = vi.spyOn(node.store, 'allServices');
    const requests = [
      { method: 'PUT' as const, url: '/eureka/apps/ORDERS/unknown' },
      { method: 'DELETE' as const, url: '/eureka/apps/ORDERS/unknown' },
      { method: 'PUT' as const, url: '/eureka/apps/ORDERS/unknown/status?value=DOWN' },
      { method: 'DELETE' as const, url: '/eureka/apps/ORDERS/unknown/status' },
      { method: 'PUT' as const, url: '/eureka/apps/ORDERS/unknown/metadata?k=v' },
      { method: 'GET' as const, url: '/eureka/apps/ORDERS/unknown' },
      { method: 'GET' as const, url: '/eureka/apps/NOPE' },
      { method: 'GET' as const, url: '/eureka/instances/unknown' },
    ];
    for (const request of requests) expect((await app.inject(request)).statusCode, request.url).toBe(404);
    // A new instance, and the one /v1 registered in lower case, through the upper-cased app.
    expect((await app.inject({ method: 'POST', url: '/eureka/apps/ORDERS', payload: jsClientBody({ app: 'ORDERS', instanceId: 'new-1' }) })).statusCode).toBe(204);
    expect((await app.inject({ method: 'PUT', url: '/eureka/apps/ORDERS/v1-instance' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/eureka/apps/orders/v1-instance', headers: { accept: 'application/json' } })).json().instance.app).toBe('ORDERS');
    expect((await app.inject({ url: '/eureka/apps/Orders', headers: { accept: 'application/json' } })).json().application.instance).toHaveLength(2);
    expect((await app.inject({ url: '/eureka/instances/new-1', headers: { accept: 'application/json' } })).json().instance.app).toBe('ORDERS');
    expect(walks).not.toHaveBeenCalled();
    expect(node.store.getService('default', 'ORDERS')?.instances.size).toBe(2);
  });

  it('rests on service names being ASCII whatever brings them: other letters change case differently', () => {
    // Upper-casing two names gives one app exactly when lower-casing them gives one service
    // only for ASCII: `straße` and `strasse` are two services of one app STRASSE, the Kelvin
    // sign's `\u212aelvin` and `kelvin` one service of two apps. A name rule that let these in
    // would make the one lookup miss what the walk over every service found.
    const wire = { ...record({ service: 'orders' }), leaseRemainingMs: 1_000 };
    expect(parseWireRecord(wire).service).toBe('orders');
    for (const [name, ascii] of [
      ['straße', 'strasse'],
      ['ırmak', 'irmak'],
      ['\u212aelvin', 'kelvin'],
    ] as const) {
      expect(name.toUpperCase() === ascii.toUpperCase(), name).not.toBe(name.toLowerCase() === ascii.toLowerCase());
      expect(new RegExp(NAME_PATTERN).test(name), name).toBe(false);
      expect(() => parseName('service', name), name).toThrow();
      expect(() => parseWireRecord({ ...wire, service: name }), name).toThrow();
    }
  });
});
