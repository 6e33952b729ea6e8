import dnsPacket, { type Answer, type DecodedPacket, type Packet } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { resolveConfig } from '../../../src/config/load.js';
import { DnsResponder, joined, refusal, type DnsTransport } from '../../../src/dns/responder.js';
import { createTestNode } from '../../support/node.js';

const dataOf = (answer: Answer): unknown => (answer as { data?: unknown }).data;

const dns = resolveConfig({ dns: { namespaces: ['default', 'team-a'] } }, {}, {}).protocols.dns;

async function setup(instances: number, extra: Record<string, unknown> = {}) {
  const testNode = await createTestNode();
  for (let i = 0; i < instances; i++) {
    testNode.node.registry.register({
      namespace: 'default',
      service: 'Web',
      instanceId: `web-${String(i).padStart(3, '0')}`,
      data: { host: `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`, port: 8000 + i, securePort: null, status: 'UP', weight: 1, zone: i % 2 ? 'z1' : 'z2', metadata: {}, ...extra },
      leaseDurationMs: 30_000,
    });
  }
  const responder = new DnsResponder({ views: testNode.node.views, regionOfZone: () => undefined }, dns);
  const ask = (question: { name: string; type: string }, options: { id?: number; udp?: number; transport?: DnsTransport; flags?: number } = {}) => {
    const query: Packet = {
      type: 'query',
      id: options.id ?? 4242,
      flags: options.flags ?? dnsPacket.RECURSION_DESIRED,
      questions: [question as never],
      additionals: options.udp ? [{ type: 'OPT', name: '.', udpPayloadSize: options.udp, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] : [],
    };
    const reply = responder.answer(dnsPacket.encode(query), options.transport ?? 'udp');
    if (!reply) throw new Error('no answer');
    const bytes = joined(reply);
    return { bytes, packet: dnsPacket.decode(bytes) as unknown as DecodedPacket & { rcode: string } };
  };
  return { ...testNode, responder, ask };
}

describe('DnsResponder', () => {
  it('answers A for a service whatever the case, echoing the id, the RD bit and the question as asked', async () => {
    const { ask } = await setup(3);
    const { packet } = ask({ name: 'wEb.SERVICE.Registry', type: 'A' }, { id: 999 });
    expect(packet.id).toBe(999);
    expect(packet.flag_qr && packet.flag_aa && packet.flag_rd && !packet.flag_tc).toBe(true);
    expect(packet.rcode).toBe('NOERROR');
    expect(packet.questions).toEqual([{ name: 'wEb.SERVICE.Registry', type: 'A', class: 'IN' }]);
    expect(packet.answers!.map((answer) => dataOf(answer)).sort()).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    expect(ask({ name: 'web.service.default.registry', type: 'A' }, { flags: 0 }).packet.flag_rd).toBe(false);
  });

  it('encodes an answer once per view and question, and again after a change', async () => {
    const { node, ask } = await setup(3);
    const encoding = node.views.encoding.bind(node.views);
    let builds = 0;
    node.views.encoding = (view, name, build) => encoding(view, name, (current) => ((builds += 1), build(current)));
    ask({ name: 'web.service.registry', type: 'SRV' });
    ask({ name: 'WEB.service.registry', type: 'SRV' }, { id: 1 });
    ask({ name: 'web.service.registry', type: 'SRV' }, { id: 2 });
    const firstBuilds = builds;
    expect(firstBuilds).toBe(2); // the qualifiers of the view, then the SRV answer
    node.registry.cancel({ namespace: 'default', service: 'Web', instanceId: 'web-000' });
    const { packet } = ask({ name: 'web.service.registry', type: 'SRV' });
    expect(packet.answers).toHaveLength(2);
    expect(builds).toBe(firstBuilds + 2);
  });

  it('answers NXDOMAIN with the SOA for unknown names, and REFUSED outside the domain', async () => {
    const { ask } = await setup(1);
    for (const name of ['nope.service.registry', 'web.service.secret.registry', 'mars.web.service.registry', 'x.group.web.service.registry', 'what.registry']) {
      const { packet } = ask({ name, type: 'A' });
      expect(packet.rcode, name).toBe('NXDOMAIN');
      expect(packet.authorities![0], name).toMatchObject({ type: 'SOA', name: 'registry', ttl: 5, data: { minimum: 5 } });
    }
    expect(ask({ name: 'example.com', type: 'A' }).packet.rcode).toBe('REFUSED');
  });

  it('answers NODATA for a type the name has no record of, and the SOA at the apex', async () => {
    const { ask } = await setup(1);
    const mx = ask({ name: 'web.service.registry', type: 'MX' }).packet;
    expect([mx.rcode, mx.answers!.length, mx.authorities![0]!.type]).toEqual(['NOERROR', 0, 'SOA']);
    expect(ask({ name: 'registry', type: 'SOA' }).packet.answers![0]).toMatchObject({ type: 'SOA', data: { mname: 'ns.registry', rname: 'hostmaster.registry' } });
    expect(ask({ name: '0a000001.addr.registry', type: 'A' }).packet.answers![0]).toMatchObject({ type: 'A', data: '10.0.0.1' });
  });

  it('truncates a UDP answer that does not fit (TC) and sends it whole over TCP', async () => {
    const { ask } = await setup(500);
    const classic = ask({ name: 'web.service.registry', type: 'A' });
    expect(classic.bytes.length).toBeLessThanOrEqual(512);
    expect(classic.packet.flag_tc).toBe(true);
    expect(classic.packet.answers!.length).toBeGreaterThan(0);
    const edns = ask({ name: 'web.service.registry', type: 'A' }, { udp: 4096 });
    expect(edns.bytes.length).toBeLessThanOrEqual(dns.maxUdpPayloadBytes);
    expect(edns.bytes.length).toBeGreaterThan(512);
    expect(edns.packet.additionals!.find((record) => record.type === 'OPT')).toMatchObject({ udpPayloadSize: dns.maxUdpPayloadBytes });
    const tcp = ask({ name: 'web.service.registry', type: 'SRV' }, { transport: 'tcp' });
    expect(tcp.packet.flag_tc).toBe(false);
    expect(tcp.packet.answers).toHaveLength(500);
    expect(tcp.packet.additionals).toHaveLength(500);
  });

  it('drops the additional records before truncating answers that fit', async () => {
    const { ask } = await setup(6);
    const { bytes, packet } = ask({ name: 'web.service.registry', type: 'SRV' });
    expect(packet.flag_tc).toBe(false);
    expect(bytes.length).toBeLessThanOrEqual(512);
    expect(packet.answers).toHaveLength(6);
    expect(packet.additionals!.length).toBeGreaterThan(0);
    expect(packet.additionals!.length).toBeLessThan(6);
  });

  it('answers FORMERR, NOTIMP and BADVERS for what it cannot take, and drops responses', async () => {
    const { responder, ask } = await setup(1);
    const garbage = Buffer.from([0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05]);
    const formerr = dnsPacket.decode(joined(responder.answer(garbage, 'udp')!)) as unknown as DecodedPacket & { rcode: string };
    expect([formerr.id, formerr.rcode]).toEqual([0x1234, 'FORMERR']);
    const two = dnsPacket.encode({ type: 'query', id: 1, questions: [{ name: 'a.registry', type: 'A' }, { name: 'b.registry', type: 'A' }] });
    expect((dnsPacket.decode(joined(responder.answer(two, 'udp')!)) as unknown as { rcode: string }).rcode).toBe('FORMERR');
    const notify = dnsPacket.encode({ type: 'query', id: 1, flags: 4 << 11, questions: [{ name: 'registry', type: 'SOA' }] });
    expect((dnsPacket.decode(joined(responder.answer(notify, 'udp')!)) as unknown as { rcode: string }).rcode).toBe('NOTIMP');
    const response = dnsPacket.encode({ type: 'response', id: 1, questions: [{ name: 'web.service.registry', type: 'A' }] });
    expect(responder.answer(response, 'udp')).toBeNull();
    expect(responder.answer(Buffer.from([1, 2, 3]), 'udp')).toBeNull();
    const v1 = dnsPacket.encode({ type: 'query', id: 1, questions: [{ name: 'web.service.registry', type: 'A' }], additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 1232, ednsVersion: 1 } as never] });
    const badvers = dnsPacket.decode(joined(responder.answer(v1, 'udp')!));
    expect(badvers.additionals!.find((record) => record.type === 'OPT')).toMatchObject({ extendedRcode: 1 });
    expect(ask({ name: 'web.service.registry', type: 'A' }).packet.rcode).toBe('NOERROR');
  });

  it('never throws on random or mangled packets (seeded)', async () => {
    const { responder } = await setup(5);
    const random = seededRng(19);
    const rng = () => random.next();
    const valid = dnsPacket.encode({ type: 'query', id: 7, questions: [{ name: 'web.service.registry', type: 'SRV' }] });
    for (let i = 0; i < 3_000; i++) {
      const bytes = i % 2 ? Buffer.from(Array.from({ length: Math.floor(rng() * 80) }, () => Math.floor(rng() * 256))) : Buffer.from(valid);
      if (i % 2 === 0) for (let flip = 0; flip < 3; flip++) bytes[Math.floor(rng() * bytes.length)] = Math.floor(rng() * 256);
      expect(() => responder.answer(bytes, i % 3 ? 'udp' : 'tcp'), `seed 19, packet ${i}: ${bytes.toString('hex')}`).not.toThrow();
    }
  });

  it('refuses a query with its question only, and drops what is no plausible query', () => {
    const queryBytes = dnsPacket.encode({ type: 'query', id: 77, questions: [{ name: 'web.service.registry', type: 'A' }], additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 4096 } as never] });
    const refused = joined({ parts: refusal(queryBytes)! });
    expect(refused.length).toBeLessThanOrEqual(queryBytes.length);
    expect(dnsPacket.decode(refused)).toMatchObject({ id: 77, rcode: 'REFUSED', questions: [{ name: 'web.service.registry' }], answers: [] });
    const hugeCounts = Buffer.from([0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0]);
    expect(refusal(hugeCounts)).toBeNull();
    expect(refusal(dnsPacket.encode({ type: 'response', id: 1, questions: [{ name: 'x', type: 'A' }] }))).toBeNull();
  });

  it('serves another namespace under its own name only', async () => {
    const { node, ask } = await setup(1);
    node.registry.register({ namespace: 'team-a', service: 'api', instanceId: 'x', data: { host: '10.9.9.9', port: 1, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} }, leaseDurationMs: 30_000 });
    expect(dataOf(ask({ name: 'api.service.team-a.registry', type: 'A' }).packet.answers![0]!)).toBe('10.9.9.9');
    expect(ask({ name: 'api.service.registry', type: 'A' }).packet.rcode).toBe('NXDOMAIN');
  });
});
