import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { DOCUMENT_MAX_AGE_MS, SharedEurekaDocuments, SLICE_INSTANCES } from '../../../src/eureka/shared-documents.js';
import { registryDocument } from '../../../src/eureka/documents.js';
import { toXml } from '../../../src/eureka/xml.js';
import { createTestServer, type TestServer } from '../../support/server.js';
import { PARTIAL_WINDOW_HASH_CODE } from '../../../src/eureka/recent-changes.js';

let server: TestServer | undefined;
afterEach(async () => server?.app.close());

const reg = (service: string, instanceId: string) => ({
  namespace: 'default',
  service,
  instanceId,
  data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: { k: 'v' } },
  leaseDurationMs: 30_000,
});

async function setup() {
  server = await createTestServer();
  const { node } = server;
  let yields = 0;
  const shared = new SharedEurekaDocuments(
    // A stopped clock: only the counts of work make a build yield, so the yields can be counted.
    { views: node.views, store: node.store, leaseView: () => node.registry.leaseView(), yieldTurn: async () => void (yields += 1), elapsedMs: () => 0 },
    { namespace: 'default', defaults: { renewalIntervalSecs: 10 } },
  );
  const fresh = () => registryDocument({ store: node.store, namespace: 'default', view: node.registry.leaseView(), defaults: { renewalIntervalSecs: 10 } });
  return { ...server, shared, fresh, yields: () => yields };
}

describe('shared Eureka documents', () => {
  it('build each application part once and share it between fetches; a change rebuilds only its application', async () => {
    const { node, shared } = await setup();
    for (let i = 0; i < 3; i++) node.registry.register(reg('orders', `o-${i}`));
    node.registry.register(reg('billing', 'b-0'));
    const first = await shared.registry('json', false);
    const second = await shared.registry('json', false);
    // Head, BILLING, separator, ORDERS, tail: the parts are the same buffers.
    expect(second.chunks.slice(1, -1)).toEqual(first.chunks.slice(1, -1));
    second.chunks.slice(1, -1).forEach((chunk, i) => expect(chunk).toBe(first.chunks[i + 1]));
    node.registry.register(reg('orders', 'o-9'));
    const third = await shared.registry('json', false);
    expect(third.chunks[1]).toBe(first.chunks[1]);
    expect(third.chunks.at(-2)).not.toBe(first.chunks.at(-2));
  });

  it('writes the bytes a fresh build writes, in JSON and XML, in slices for large applications', async () => {
    const { node, shared, fresh } = await setup();
    for (let i = 0; i < SLICE_INSTANCES * 2 + 7; i++) node.registry.register(reg('orders', `o-${String(i).padStart(4, '0')}`));
    node.registry.register(reg('billing', 'b-0'));
    const json = await shared.registry('json', false);
    expect(json.chunks.length).toBeGreaterThan(4);
    expect(Buffer.concat(json.chunks).toString()).toBe(JSON.stringify(fresh()));
    expect(json.bytes).toBe(Buffer.concat(json.chunks).length);
    const xml = await shared.registry('xml', false);
    expect(Buffer.concat(xml.chunks).toString()).toBe(toXml(fresh()));
  });

  it('gzips per part: the members read back as the plain document', async () => {
    const { node, shared, fresh } = await setup();
    for (let i = 0; i < 5; i++) node.registry.register(reg(`svc-${i}`, `i-${i}`));
    const zipped = await shared.registry('json', true);
    expect(gunzipSync(Buffer.concat(zipped.chunks)).toString()).toBe(JSON.stringify(fresh()));
    const again = await shared.registry('json', true);
    expect(again.chunks[1]).toBe(zipped.chunks[1]);
  });

  it('serves the full fetch over HTTP from the shared parts, gzip or not', async () => {
    const { node, app, fresh } = await setup();
    for (let i = 0; i < 3; i++) node.registry.register(reg('orders', `o-${i}`));
    const plain = await app.inject({ url: '/eureka/apps', headers: { accept: 'application/json' } });
    expect(plain.headers['content-length']).toBe(String(plain.rawPayload.length));
    expect(plain.body).toBe(JSON.stringify(fresh()));
    const zipped = await app.inject({ url: '/eureka/apps', headers: { accept: 'application/json', 'accept-encoding': 'gzip' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(zipped.rawPayload).toString()).toBe(plain.body);
    const delta = await app.inject({ url: '/eureka/apps/delta', headers: { accept: 'application/json', 'accept-encoding': 'gzip' } });
    // The window started with this test's first read: not whole yet, so no copy may match.
    expect(JSON.parse(gunzipSync(delta.rawPayload).toString()).applications.apps__hashcode).toBe(PARTIAL_WINDOW_HASH_CODE);
  });

  it('keep the assembled full fetch for the fetches that follow, until anything it came from changes', async () => {
    const { node, clock, shared, fresh } = await setup();
    for (let i = 0; i < 3; i++) node.registry.register(reg('orders', `o-${i}`));
    node.registry.register(reg('billing', 'b-0'));
    const first = await shared.registry('json', false);
    // The same body, not one assembled again from the same parts.
    expect(await shared.registry('json', false)).toBe(first);
    // Each format and encoding has its own.
    const xml = await shared.registry('xml', false);
    expect(xml).not.toBe(first);
    expect(await shared.registry('xml', false)).toBe(xml);
    // A change: the next fetch has it.
    node.registry.register(reg('orders', 'o-9'));
    const changed = await shared.registry('json', false);
    expect(changed).not.toBe(first);
    expect(Buffer.concat(changed.chunks).toString()).toBe(JSON.stringify(fresh()));
    // Past its age bound it is assembled again, from the same parts.
    await clock.advance(DOCUMENT_MAX_AGE_MS);
    const older = await shared.registry('json', false);
    expect(older).not.toBe(changed);
    older.chunks.slice(1, -1).forEach((chunk, i) => expect(chunk).toBe(changed.chunks[i + 1]));
  });

  it('do not keep a full fetch past a lease end that changes what is served, with no store change', async () => {
    const { node, clock, shared, fresh } = await setup();
    node.reaper.stop();
    node.registry.register({ ...reg('orders', 'o-short'), leaseDurationMs: 2_000 });
    node.registry.register(reg('orders', 'o-long'));
    await clock.advance(1_500);
    const before = await shared.registry('json', false);
    expect(Buffer.concat(before.chunks).toString()).toContain('o-short');
    const revision = node.store.revision;
    // Within the document's age bound, past the short lease's end.
    await clock.advance(DOCUMENT_MAX_AGE_MS - 400);
    expect(node.store.revision).toBe(revision);
    const after = await shared.registry('json', false);
    expect(Buffer.concat(after.chunks).toString()).toBe(JSON.stringify(fresh()));
    expect(Buffer.concat(after.chunks).toString()).not.toContain('o-short');
  });

  it('let a kept full fetch go at the first change, not at the next fetch', async () => {
    const { node, shared } = await setup();
    node.registry.register(reg('orders', 'o-0'));
    await shared.registry('json', false);
    await shared.registry('xml', true);
    expect(shared.keptDocuments).toBe(2);
    node.registry.register(reg('orders', 'o-1'));
    expect(shared.keptDocuments).toBe(0);
  });
});

describe('a full fetch in turns of one budget', () => {
  it.each([
    [2_000, 1],
    [400, 5],
    [8, 250],
    [1, 2_000],
  ])('yields after every bounded amount of work, whatever the apps: %i apps of %i instances', async (apps, perApp) => {
    const { node, shared, fresh, yields } = await setup();
    for (let i = 0; i < apps * perApp; i++) node.registry.register(reg(`svc-${String(i % apps).padStart(4, '0')}`, `i-${i}`));
    // At most SLICE_INSTANCES instances written per turn: small apps (each under a slice) do not
    // chain one after the other in one turn, nor do a cold build's steps.
    const json = await shared.registry('json', false);
    expect(yields()).toBeGreaterThanOrEqual((apps * perApp) / SLICE_INSTANCES);
    expect(Buffer.concat(json.chunks).toString()).toBe(JSON.stringify(fresh()));
    const before = yields();
    const xml = await shared.registry('xml', false);
    expect(yields() - before).toBeGreaterThanOrEqual((apps * perApp) / SLICE_INSTANCES);
    expect(Buffer.concat(xml.chunks).toString()).toBe(toXml(fresh()));
  });

  it('yields in the steps of every app of a warm fetch too, when every part but one is kept', async () => {
    const { node, shared, fresh, yields } = await setup();
    const apps = 6_000;
    for (let i = 0; i < apps; i++) node.registry.register(reg(`svc-${i}`, `i-${i}`));
    const cold = await shared.registry('json', false);
    node.registry.register(reg('svc-1', 'changed'));
    const before = yields();
    const warm = await shared.registry('json', false);
    // Gathered, sorted, counted and assembled app by app: a unit each at least, 5,000 a turn.
    expect(yields() - before).toBeGreaterThanOrEqual((apps * 3) / 5_000);
    expect(Buffer.concat(warm.chunks).toString()).toBe(JSON.stringify(fresh()));
    // Only the changed app was written again.
    const kept = warm.chunks.filter((chunk) => cold.chunks.includes(chunk)).length;
    expect(kept).toBe(warm.chunks.length - 3);
  });
});
