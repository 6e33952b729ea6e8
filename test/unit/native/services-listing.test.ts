import { afterEach, describe, expect, it } from 'vitest';
import { applicationOf } from '../../../src/app/application.js';
import { KEPT_LISTINGS_MAX, ServicesListings } from '../../../src/native/services-listing.js';
import { listServices } from '../../../src/registry/queries.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer;
afterEach(async () => server?.app.close());

async function started(): Promise<TestServer> {
  server = await createTestServer();
  return server;
}

async function register(service: string, port: number, extra: Record<string, unknown> = {}): Promise<void> {
  const response = await server.app.inject({ method: 'POST', url: '/v1/instances', payload: { service, host: '10.0.0.5', port, ...extra } });
  expect(response.statusCode).toBe(201);
}

const text = (listing: { chunks: readonly Buffer[] }) => Buffer.concat(listing.chunks).toString('utf8');

describe('GET /v1/services, built once per change and shared (services-listing.ts)', () => {
  it('answers the same bytes as the listing serialized whole, with the revision in its header', async () => {
    const { app, node } = await started();
    await register('orders', 8080);
    await register('orders', 8081, { status: 'DOWN' });
    await register('billing', 9000, { group: 'canary' });
    await register('billing', 9001, { namespace: 'team-a' });
    for (const [query, namespace, group] of [
      ['', 'default', null],
      ['?group=canary', 'default', 'canary'],
      ['?group=none', 'default', 'none'],
      ['?namespace=team-a', 'team-a', null],
      ['?namespace=empty', 'empty', null],
    ] as const) {
      const response = await app.inject({ url: `/v1/services${query}` });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      const revision = node.store.revision;
      expect(response.headers['x-registry-index']).toBe(String(revision));
      expect(response.body).toBe(JSON.stringify({ namespace, revision, services: listServices(node.store, namespace, node.registry.leaseView(), group) }));
    }
    const head = await app.inject({ method: 'HEAD', url: '/v1/services' });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
    expect((await app.inject({ url: '/v1/services' })).json().services).toEqual([
      { service: 'billing', instances: 1, up: 1 },
      { service: 'orders', instances: 2, up: 1 },
    ]);
  });

  it('serves the kept bytes while nothing changed, and a new listing after a change', async () => {
    const { node } = await started();
    await register('orders', 8080);
    const listings = new ServicesListings(applicationOf(node).reads);
    const first = await listings.listing('default', null);
    // Readers arriving together share one build; readers after it share its bytes.
    const [a, b] = await Promise.all([listings.listing('default', null), listings.listing('default', null)]);
    expect(a).toBe(first);
    expect(b).toBe(first);
    await register('billing', 9000);
    const after = await listings.listing('default', null);
    expect(after).not.toBe(first);
    expect(JSON.parse(text(after)).services.map((s: { service: string }) => s.service)).toEqual(['billing', 'orders']);
  });

  it('drops an instance whose lease ran out', async () => {
    const { node, clock } = await started();
    await register('orders', 8080, { leaseDurationMs: 5_000 });
    await register('billing', 9000, { leaseDurationMs: 600_000 });
    const listings = new ServicesListings(applicationOf(node).reads);
    expect(JSON.parse(text(await listings.listing('default', null))).services).toHaveLength(2);
    await clock.advance(5_001);
    expect(JSON.parse(text(await listings.listing('default', null))).services).toEqual([{ service: 'billing', instances: 1, up: 1 }]);
  });

  it('keeps at most KEPT_LISTINGS_MAX listings, whatever namespaces and groups clients ask for', async () => {
    const { node } = await started();
    await register('orders', 8080);
    const listings = new ServicesListings(applicationOf(node).reads);
    for (let i = 0; i < KEPT_LISTINGS_MAX * 3; i++) await listings.listing('default', `g${i}`);
    expect(listings.keptCount).toBe(KEPT_LISTINGS_MAX);
  });
});
