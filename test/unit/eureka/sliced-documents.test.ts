import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { buildDeltaDocument } from '../../../src/eureka/delta-document.js';
import { deltaDocument, registryDocument, vipDocument, vipMatcher } from '../../../src/eureka/documents.js';
import { withEureka } from '../../../src/eureka/attributes.js';
import { eurekaAttributes } from './fixtures.js';
import { GzipPool } from '../../../src/eureka/gzip-pool.js';
import { RecentChanges } from '../../../src/eureka/recent-changes.js';
import { HASH_SLICE_INSTANCES, PART_MAX_AGE_MS, SharedEurekaDocuments } from '../../../src/eureka/shared-documents.js';
import { toXml } from '../../../src/eureka/xml.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => server?.app.close());

const defaults = { renewalIntervalSecs: 10 };
const reg = (service: string, instanceId: string, status: 'UP' | 'DOWN' = 'UP') => ({
  namespace: 'default',
  service,
  instanceId,
  data: { host: '10.0.0.1', port: 8080, securePort: null, status, weight: 1, zone: '', metadata: { k: 'v' } },
  leaseDurationMs: 30_000,
});

async function setup() {
  server = await createTestServer();
  const { node, clock } = server;
  let yields = 0;
  const shared = new SharedEurekaDocuments(
    // A stopped clock: only the counts of work make a build yield, so the yields can be counted.
    { views: node.views, store: node.store, leaseView: () => node.registry.leaseView(), yieldTurn: async () => void (yields += 1), elapsedMs: () => 0 },
    { namespace: 'default', defaults },
  );
  const recent = new RecentChanges({ clock, store: node.store, leaseView: () => node.registry.leaseView() }, { windowMs: 180_000, namespace: 'default' });
  recent.start();
  const read = () => ({ store: node.store, namespace: 'default', view: node.registry.leaseView(), defaults });
  return { ...server, shared, recent, read, yields: () => yields };
}

describe('Eureka documents built in slices', () => {
  it('build the delta in slices of changes, yielding between them, with the bytes of the one-piece build', async () => {
    const { node, shared, recent, read } = await setup();
    for (let i = 0; i < 25; i++) node.registry.register(reg(i % 3 === 0 ? 'billing' : 'orders', `i-${i}`, i % 5 === 0 ? 'DOWN' : 'UP'));
    node.registry.cancel({ namespace: 'default', service: 'orders', instanceId: 'i-4' });
    const hashCode = await shared.hashCode();
    for (const format of ['json', 'xml'] as const) {
      let turns = 0;
      const chunks = await buildDeltaDocument({
        store: node.store,
        leaseView: () => node.registry.leaseView(),
        defaults,
        format,
        version: 7,
        changes: recent.entries(),
        hashCode: () => shared.hashCode(),
        yieldTurn: async () => void (turns += 1),
        sliceChanges: 4,
      });
      // 25 changes in slices of 4: seven slices, six yields between them.
      expect(turns).toBe(6);
      const document = deltaDocument(read(), recent.changes(), 7, hashCode);
      expect(Buffer.concat(chunks).toString()).toBe(format === 'json' ? JSON.stringify(document) : toXml(document));
    }
    expect(hashCode).toBe(registryDocument(read()).applications.apps__hashcode);
  });

  it('list an instance changed during the delta build again at the end, in its newer state', async () => {
    const { node, shared, recent } = await setup();
    for (let i = 0; i < 6; i++) node.registry.register(reg('orders', `i-${i}`));
    let turns = 0;
    const chunks = await buildDeltaDocument({
      store: node.store,
      leaseView: () => node.registry.leaseView(),
      defaults,
      format: 'json',
      version: 1,
      changes: recent.entries(),
      hashCode: () => shared.hashCode(),
      yieldTurn: async () => {
        if (turns++ === 0) node.registry.update({ namespace: 'default', service: 'orders', instanceId: 'i-0' }, { status: 'DOWN' });
      },
      sliceChanges: 2,
    });
    const document = JSON.parse(Buffer.concat(chunks).toString()) as { applications: { application: { instance: { instanceId: string; status: string; actionType: string }[] }[] } };
    const listed = document.applications.application[0]!.instance.map((instance) => `${instance.instanceId}:${instance.status}:${instance.actionType}`);
    // i-0 was written in the first slice, before its change, and again at the end, where its
    // change moved it; applied in order, the last one wins.
    expect(listed).toEqual(['i-0:UP:ADDED', 'i-1:UP:ADDED', 'i-2:UP:ADDED', 'i-3:UP:ADDED', 'i-4:UP:ADDED', 'i-5:UP:ADDED', 'i-0:DOWN:MODIFIED']);
  });

  it('count the statuses behind the apps hash code in slices once per view, with the hash code of a one-piece count', async () => {
    const { node, shared, read, yields } = await setup();
    const count = HASH_SLICE_INSTANCES * 2 + 3;
    for (let i = 0; i < count; i++) node.registry.register(reg(`svc-${i % 7}`, `i-${i}`, i % 4 === 0 ? 'DOWN' : 'UP'));
    const hashCode = await shared.hashCode();
    expect(hashCode).toBe(registryDocument(read()).applications.apps__hashcode);
    expect(hashCode).toBe(`DOWN_${Math.ceil(count / 4)}_UP_${count - Math.ceil(count / 4)}_`);
    const first = yields();
    // Kept per view: the next hash code counts nothing again; it yields for the gathering of the
    // views alone, the first one also for the 10,003 statuses counted, 5,000 a turn.
    expect(await shared.hashCode()).toBe(hashCode);
    const second = yields() - first;
    expect(first - second).toBeGreaterThanOrEqual(2);
    expect(await shared.hashCode()).toBe(hashCode);
    expect(yields() - first - second).toBe(second);
  });

  it('answer a VIP from the full fetch\'s shared parts, an app matched in part built for the read, with the bytes of the one-piece document', async () => {
    const { node, shared, read } = await setup();
    for (let i = 0; i < 30; i++) {
      // Native registrations carry no Eureka attributes: their VIP is their service name.
      node.registry.register(reg(['orders', 'billing', 'ORDERS', 'audit'][i % 4]!, `i-${String(29 - i).padStart(2, '0')}`, i % 6 === 0 ? 'DOWN' : 'UP'));
    }
    // One service whose instances are on two VIP addresses: matched in part.
    for (let i = 0; i < 6; i++) {
      const eureka = eurekaAttributes({ vipAddress: i % 2 === 0 ? 'orders,shop' : 'mixed', secureVipAddress: 'mixed' });
      const registration = reg('mixed', `m-${i}`, i === 0 ? 'DOWN' : 'UP');
      node.registry.register({ ...registration, data: withEureka(registration.data, eureka) });
    }
    for (const format of ['json', 'xml'] as const) {
      for (const [vip, secure] of [['orders', false], ['ORDERS', true], ['billing', false], ['shop', false], ['mixed', true], ['nothing', false]] as const) {
        const document = vipDocument(read(), vip, secure);
        const expected = format === 'json' ? JSON.stringify(document) : toXml(document);
        expect(Buffer.concat((await shared.vip(vipMatcher(vip, secure), format, false)).chunks).toString()).toBe(expected);
        expect(gunzipSync(Buffer.concat((await shared.vip(vipMatcher(vip, secure), format, true)).chunks)).toString()).toBe(expected);
      }
    }
    const orders = vipDocument(read(), 'orders', false);
    expect(orders.applications.application.map((app) => [app.name, app.instance.length])).toEqual([
      ['MIXED', 3],
      ['ORDERS', 15],
    ]);
    // An app matched whole is the full fetch's part: the same bytes, not a copy.
    const fetched = new Set((await shared.registry('json', false)).chunks);
    const billing = (await shared.vip(vipMatcher('billing', false), 'json', false)).chunks;
    expect(billing.slice(1, -1).every((chunk) => fetched.has(chunk))).toBe(true);
  });

  it("answer a VIP's whole apps from the kept full fetch part, lastRenewalTimestamp as of its build, for at most PART_MAX_AGE_MS", async () => {
    const { node, clock, shared } = await setup();
    node.registry.register({ ...reg('orders', 'i-1'), leaseDurationMs: 600_000 });
    const renewalOf = async () => {
      const text = Buffer.concat((await shared.vip(vipMatcher('orders', false), 'json', false)).chunks).toString();
      const document = JSON.parse(text) as { applications: { application: Array<{ instance: Array<{ leaseInfo: { lastRenewalTimestamp: number } }> }> } };
      return document.applications.application[0]!.instance[0]!.leaseInfo.lastRenewalTimestamp;
    };
    await shared.registry('json', false);
    const built = await renewalOf();
    await clock.advance(10_000);
    node.registry.heartbeat({ namespace: 'default', service: 'orders', instanceId: 'i-1' });
    expect(await renewalOf()).toBe(built);
    await clock.advance(PART_MAX_AGE_MS);
    expect(await renewalOf()).toBe(built + 10_000);
  });

  it('answer a VIP over many instances in turns of one budget', async () => {
    const { node, shared, read, yields } = await setup();
    const count = HASH_SLICE_INSTANCES * 2 + 3;
    for (let i = 0; i < count; i++) node.registry.register(reg(i % 2 === 0 ? 'orders' : 'billing', `i-${i}`));
    const before = yields();
    const body = await shared.vip(vipMatcher('orders', false), 'json', false);
    // Every served instance is looked at, and the matched ones written: more than one turn.
    expect(yields() - before).toBeGreaterThanOrEqual(2);
    expect(Buffer.concat(body.chunks).toString()).toBe(JSON.stringify(vipDocument(read(), 'orders', false)));
  });

  it('keep only the delta encodings asked for: a gzip client keeps no plain copy, and each is built once per window', async () => {
    const { shared } = await setup();
    let builds = 0;
    const build = async () => ((builds += 1), [Buffer.from('{"applications":'), Buffer.from('{}}')]);
    const zipped = await shared.delta(7, 'json', 1_000, true, build);
    expect(gunzipSync(Buffer.concat(zipped.chunks)).toString()).toBe('{"applications":{}}');
    await shared.delta(7, 'json', 1_000, true, build);
    expect(builds).toBe(1);
    // The plain bytes were let go once compressed: a plain client builds them again, once.
    const plain = await shared.delta(7, 'json', 1_000, false, build);
    await shared.delta(7, 'json', 1_000, false, build);
    await shared.delta(7, 'json', 1_000, true, build);
    expect(builds).toBe(2);
    expect(Buffer.concat(plain.chunks).toString()).toBe('{"applications":{}}');
    expect(plain.bytes).toBe(19);
  });

  it('build at most one delta of a format and encoding at a time: requests at later revisions meanwhile get it', async () => {
    const { shared } = await setup();
    const started: number[] = [];
    const finish: (() => void)[] = [];
    const build = (revision: number) => () => {
      started.push(revision);
      return new Promise<Buffer[]>((resolve) => finish.push(() => resolve([Buffer.from(`{"revision":${revision}}`)])));
    };
    const text = async (body: Promise<{ chunks: Buffer[] }>) => Buffer.concat((await body).chunks).toString();
    // Revisions 7, 8 and 9 asked for while 7 builds: one build, one answer for all three.
    const answers = [7, 8, 9].map((revision) => text(shared.delta(revision, 'json', 1_000, false, build(revision))));
    const zipped = shared.delta(9, 'json', 1_000, true, build(9));
    expect(started).toEqual([7]);
    finish[0]!();
    expect(await Promise.all(answers)).toEqual(['{"revision":7}', '{"revision":7}', '{"revision":7}']);
    // The gzip client compressed the same build.
    expect(gunzipSync(Buffer.concat((await zipped).chunks)).toString()).toBe('{"revision":7}');
    // Built: the next request at a later revision builds its own; one at the built revision does not.
    const next = text(shared.delta(9, 'json', 1_000, false, build(9)));
    expect(started).toEqual([7, 9]);
    finish[1]!();
    expect(await next).toBe('{"revision":9}');
    expect(await text(shared.delta(9, 'json', 1_000, false, build(9)))).toBe('{"revision":9}');
    // Another format is built apart.
    const xml = shared.delta(9, 'xml', 1_000, false, build(90));
    expect(started).toEqual([7, 9, 90]);
    finish[2]!();
    await xml;
  });

  it('build a delta again after a failed build, rather than keep the failure', async () => {
    const { shared } = await setup();
    let builds = 0;
    const failing = async (): Promise<Buffer[]> => {
      builds += 1;
      throw new Error('build failed');
    };
    await expect(shared.delta(3, 'json', 1_000, false, failing)).rejects.toThrow('build failed');
    await expect(shared.delta(3, 'json', 1_000, false, failing)).rejects.toThrow('build failed');
    expect(builds).toBe(2);
  });

  it('give a gzip client the gzipped parts only: no plain copy is built for it', async () => {
    const { node, shared, read } = await setup();
    for (let i = 0; i < 40; i++) node.registry.register(reg('orders', `i-${String(i).padStart(2, '0')}`));
    const zipped = await shared.registry('json', true);
    expect(gunzipSync(Buffer.concat(zipped.chunks)).toString()).toBe(JSON.stringify(registryDocument(read())));
    const view = node.views.stable('default', 'orders');
    const built: string[] = [];
    for (const name of ['eureka-json', 'eureka-json-gzip']) node.views.stableEncoding(view, name, () => built.push(name));
    expect(built).toEqual(['eureka-json']);
  });
});

describe('GzipPool', () => {
  it('hands a piece over only while fewer than maxInFlight compress, and keeps the order', async () => {
    const pool = new GzipPool(2);
    const pieces = Array.from({ length: 3 }, (_, i) => Buffer.from(`piece ${i} `.repeat(1_000)));
    const first = await pool.start(pieces[0]!);
    const second = await pool.start(pieces[1]!);
    expect(pool.busy).toBe(2);
    let handedOver = false;
    const third = pool.start(pieces[2]!).then((started) => ((handedOver = true), started));
    // Microtasks only: no compression can finish (and free a place) before these run.
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(handedOver).toBe(false);
    const packed = [await first.packed, await second.packed, await (await third).packed];
    expect(handedOver).toBe(true);
    expect(pool.busy).toBe(0);
    expect(gunzipSync(Buffer.concat(packed)).toString()).toBe(Buffer.concat(pieces).toString());
    expect(gunzipSync(Buffer.concat(await pool.gzipAll(pieces))).toString()).toBe(Buffer.concat(pieces).toString());
    // Small chunks are joined into pieces of at least pieceBytes: 3 chunks of 8,000 bytes, pieces of 10,000.
    const members = await pool.gzipAll(pieces, 10_000);
    expect(members).toHaveLength(2);
    expect(gunzipSync(Buffer.concat(members)).toString()).toBe(Buffer.concat(pieces).toString());
  });

  it('lets a piece that fails before the builder awaits it reject there, not as an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      const pool = new GzipPool(2);
      // Not a buffer: zlib refuses it, so the piece fails while the builder is still building.
      const { packed } = await pool.start(42 as unknown as Buffer);
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      await expect(packed).rejects.toThrow(TypeError);
      expect(pool.busy).toBe(0);
    } finally {
      process.off('unhandledRejection', record);
    }
  });
});
