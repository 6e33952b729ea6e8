import { afterEach, describe, expect, it } from 'vitest';
import { ackRefTimeOf } from '../../../src/nacos/push.js';
import { createTestNacos, form, type TestNacos } from '../../support/nacos.js';

let t: TestNacos;
afterEach(async () => t?.close());

const BASE = '/nacos/v1/ns';
const web = { serviceName: 'DEFAULT_GROUP@@web', ip: '10.0.0.1', port: '8080' };
const register = (fields: Record<string, string>) => t.app.inject({ method: 'POST', url: `${BASE}/instance`, ...form(fields) });
const subscribe = (udpPort: number, remoteAddress = '127.0.0.1', extra = '') =>
  t.app.inject({ url: `${BASE}/instance/list?serviceName=DEFAULT_GROUP%40%40web&udpPort=${udpPort}&clientIP=192.0.2.99${extra}`, remoteAddress });
const ack = (lastRefTime: number, port: number, address = '127.0.0.1') => t.push!.receive(Buffer.from(JSON.stringify({ type: 'push-ack', lastRefTime, data: '' })), address, port);

describe('Nacos UDP push', () => {
  it('pushes a listed service on every change to the source address of the list, never to clientIP', async () => {
    t = await createTestNacos();
    await register(web);
    await subscribe(40_001, '127.0.0.5');
    expect(t.socket.sent).toEqual([]);
    await register({ ...web, ip: '10.0.0.2' });
    await t.clock.advance(0);
    expect(t.socket.sent).toHaveLength(1);
    const [push] = t.socket.sent;
    expect([push!.address, push!.port, push!.packet.type]).toEqual(['127.0.0.5', 40_001, 'dom']);
    const data = JSON.parse(push!.packet.data) as { name: string; hosts: { ip: string }[]; lastRefTime: number };
    expect(data.name).toBe('DEFAULT_GROUP@@web');
    expect(data.hosts.map((host) => host.ip)).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(data.lastRefTime).toBe(push!.packet.lastRefTime);
    // A list of the same state says the same time: clients warn when a list is older than a push.
    await t.clock.advance(5_000);
    const listed = (await subscribe(40_001, '127.0.0.5')).json() as { lastRefTime: number };
    expect(listed.lastRefTime).toBe(data.lastRefTime);
  });

  it('sends again until push-ack, at most pushRetriesMax times, and an ack from elsewhere does not count', async () => {
    t = await createTestNacos({ file: { nacos: { pushRetriesMax: 2, pushRetryIntervalMs: 500 } } });
    await subscribe(40_001);
    await subscribe(40_002);
    await register(web);
    await t.clock.advance(0);
    expect(t.socket.sent.map((push) => push.port)).toEqual([40_001, 40_002]);
    const { lastRefTime } = t.socket.sent[0]!.packet;
    ack(lastRefTime, 40_001);
    ack(lastRefTime, 40_002, '192.0.2.1');
    await t.clock.advance(500);
    expect(t.socket.sent.map((push) => push.port)).toEqual([40_001, 40_002, 40_002]);
    await t.clock.advance(500);
    await t.clock.advance(500);
    await t.clock.advance(5_000);
    // One send and two retries for the target that never acked; none more.
    expect(t.socket.sent.filter((push) => push.port === 40_002)).toHaveLength(3);
    expect(t.push!.counts).toMatchObject({ acked: 1, givenUp: 1 });
  });

  it('gzips payloads above 1 KB, and builds one payload per change for every target of the same list', async () => {
    t = await createTestNacos();
    for (let i = 0; i < 3; i++) await subscribe(40_000 + i);
    const created = await register({ ...web, metadata: JSON.stringify({ a: 'x'.repeat(400), b: 'y'.repeat(400), c: 'z'.repeat(400) }) });
    expect(created.body).toBe('ok');
    await t.clock.advance(0);
    expect(t.socket.sent.map((push) => push.gzipped)).toEqual([true, true, true]);
    expect(t.socket.raw[0]).toBe(t.socket.raw[1]);
    expect(t.socket.raw[1]).toBe(t.socket.raw[2]);
    expect(t.push!.counts.encodes).toBe(1);
  });

  it('builds one payload per variant asked and change: another group name or clusters filter is another payload, another service none', async () => {
    t = await createTestNacos();
    for (let i = 0; i < 5; i++) await subscribe(40_000 + i);
    await subscribe(41_000, '127.0.0.1', '&clusters=zone-a');
    await t.app.inject({ url: `${BASE}/instance/list?serviceName=other&udpPort=42000` });
    await register(web);
    await t.clock.advance(0);
    expect([t.push!.counts.encodes, t.socket.sent.length]).toEqual([2, 6]);
    expect(new Set(t.socket.raw.slice(0, 5)).size + new Set(t.socket.raw).size).toBe(3);
    await register({ ...web, ip: '10.0.0.2' });
    await t.clock.advance(0);
    expect([t.push!.counts.encodes, t.socket.sent.length]).toEqual([4, 12]);
  });

  it('stops pushing to a client that stopped listing (pushSubscriptionTtlMs)', async () => {
    t = await createTestNacos({ file: { nacos: { pushSubscriptionTtlMs: 10_000 } } });
    await subscribe(40_001);
    await t.clock.advance(8_000);
    await subscribe(40_001);
    await t.clock.advance(8_000);
    await register(web);
    await t.clock.advance(0);
    expect(t.socket.sent).toHaveLength(1);
    ack(t.socket.sent[0]!.packet.lastRefTime, 40_001);
    await t.clock.advance(12_000);
    expect(t.push!.size).toBe(0);
    await register({ ...web, ip: '10.0.0.2' });
    await t.clock.advance(0);
    expect(t.socket.sent).toHaveLength(1);
  });

  it('holds each target as a slot of the peer pool: a share per principal, the cap in all, given back on expiry', async () => {
    // Three targets in all, two per principal (here an address without a token; loopback is share-exempt).
    t = await createTestNacos({ file: { nacos: { pushTargetsMax: 3 }, limits: { heldSharePerPrincipalRatio: 0.67 } } });
    for (const port of [1, 2, 3]) expect((await subscribe(40_000 + port, '10.0.0.7')).statusCode).toBe(200);
    expect(t.push!.size).toBe(2);
    // One principal holding its share leaves room for another; the peer's cap then refuses.
    await subscribe(50_001, '10.0.0.8');
    const refused = await subscribe(50_002, '10.0.0.9');
    expect(refused.statusCode).toBe(200);
    expect(t.push!.size).toBe(3);
    expect([t.metrics.pools.get('udp_push_targets')!.refusedAtPrincipalShare, t.metrics.pools.get('udp_push_targets')!.refusedAtPeerCap]).toEqual([1, 1]);
    await register(web);
    await t.clock.advance(0);
    expect(t.socket.sent.map((push) => `${push.address}:${push.port}`).sort()).toEqual(['10.0.0.7:40001', '10.0.0.7:40002', '10.0.0.8:50001']);
    // Renewing a target takes no new slot; an expired one gives its slot back.
    await subscribe(40_001, '10.0.0.7');
    expect(t.pools.pushTargets.held).toBe(3);
    await t.clock.advance(60_000);
    expect([t.push!.size, t.pools.pushTargets.held]).toEqual([0, 0]);
    await subscribe(50_002, '10.0.0.9');
    expect(t.push!.size).toBe(1);
  });

  it('keeps an IPv4-mapped source as its IPv4 address, which its acks come from', async () => {
    t = await createTestNacos();
    await subscribe(40_001, '::ffff:127.0.0.9');
    await register(web);
    await t.clock.advance(0);
    expect(t.socket.sent.map((push) => push.address)).toEqual(['127.0.0.9']);
    ack(t.socket.sent[0]!.packet.lastRefTime, 40_001, '127.0.0.9');
    expect(t.push!.counts.acked).toBe(1);
  });

  it('ignores acks that are not JSON, too large, or for no push', async () => {
    t = await createTestNacos();
    await subscribe(40_001);
    await register(web);
    await t.clock.advance(0);
    t.push!.receive(Buffer.from('not json'), '127.0.0.1', 40_001);
    t.push!.receive(Buffer.alloc(10_000, 32), '127.0.0.1', 40_001);
    ack(12_345, 40_001);
    expect(t.push!.counts.acked).toBe(0);
  });
});

describe('Nacos push-ack', () => {
  it.each([
    ['compact, as npm nacos sends it', '{"type":"push-ack","lastRefTime":1733385600123,"data":""}', 1_733_385_600_123],
    ['compact, last field', '{"type":"push-ack","lastRefTime":42}', 42],
    ['with spaces (parsed)', '{ "type": "push-ack", "lastRefTime": 42, "data": "" }', 42],
    ['fields in another order (parsed)', '{"lastRefTime":42,"type":"push-ack"}', 42],
    ['a fraction (parsed)', '{"type":"push-ack","lastRefTime":4.5}', 4.5],
    ['no digits', '{"type":"push-ack","lastRefTime":"42"}', null],
    ['another type', '{"type":"dom","lastRefTime":42}', null],
    ['not JSON', 'push-ack 42', null],
    ['cut short', '{"type":"push-ack","lastRefTime":42', null],
  ])('reads the lastRefTime of an ack: %s', (_case, text, expected) => {
    expect(ackRefTimeOf(Buffer.from(text))).toBe(expected);
  });

  it('ignores an ack larger than 4 KB unread', () => {
    expect(ackRefTimeOf(Buffer.from(`{"type":"push-ack","lastRefTime":42,"data":"${'x'.repeat(5_000)}"}`))).toBeNull();
  });
});

describe('Nacos UDP push size', () => {
  it('does not push a service whose payload no datagram holds, even gzipped (the client polls it)', async () => {
    t = await createTestNacos({ file: { limits: { metadataValueMaxLength: 65_536 } } });
    await subscribe(40_001);
    // Random-looking text gzips poorly: about 90 KB even compressed.
    let seed = 7;
    const noise = () => Array.from({ length: 30_000 }, () => ((seed = (seed * 48_271) % 2_147_483_647), String.fromCharCode(33 + (seed % 90)))).join('');
    for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) {
      expect((await register({ ...web, ip, metadata: JSON.stringify({ blob: noise() }) })).body).toBe('ok');
      await t.clock.advance(0);
    }
    // One and two instances fit (about 25 KB each, gzipped); three do not.
    expect(t.socket.sent.map((push) => JSON.parse(push.packet.data).hosts.length)).toEqual([1, 2]);
    expect(t.socket.raw.every((bytes) => bytes.length <= 65_507)).toBe(true);
    expect(t.push!.counts.tooLarge).toBeGreaterThan(0);
  });
});
