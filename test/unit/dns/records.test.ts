import type { Answer } from 'dns-packet';
import { describe, expect, it } from 'vitest';
import type { ServiceLookup } from '../../../src/dns/names.js';
import { PRIORITY, RCODE, serviceRecords, srvWeight, type RecordContext } from '../../../src/dns/records.js';
import type { InstanceView } from '../../../src/registry/view.js';
import type { ServiceView } from '../../../src/views/service-views.js';

const dataOf = (answer: Answer): unknown => (answer as { data?: unknown }).data;

function instance(id: string, host: string, extra: Partial<InstanceView> = {}): InstanceView {
  return {
    namespace: 'default', service: 'web', instanceId: id, host, port: 8000, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {},
    group: 'DEFAULT_GROUP', region: null, owner: 'peer-1', version: 'v', leaseDurationMs: 30_000, leaseExpiresInMs: 30_000, leaseLive: true,
    evictionHeld: false, registeredAtMs: 0, lastUpdatedAtMs: 0, ...extra,
  };
}

function view(instances: InstanceView[], builtAtMs = 0): ServiceView {
  return { namespace: 'default', service: 'web', revision: 7, builtAtMs, served: [], instances };
}

const context: RecordContext = { domain: 'registry.', ttlSeconds: 5, regionOfZone: (zone) => ({ 'eu-1': 'eu', 'eu-2': 'eu', 'us-1': 'us' })[zone] };
const lookup = (extra: Partial<ServiceLookup> = {}): ServiceLookup => ({ kind: 'service', namespace: 'default', service: 'web', zone: null, group: null, ...extra });
const OWNER = 'web.service.registry';

const fleet = [
  instance('a', '10.0.0.1', { zone: 'eu-1', region: 'eu', port: 8001, weight: 3 }),
  instance('b', '10.0.0.2', { zone: 'eu-2', region: 'eu', port: 8002 }),
  instance('c', '10.0.0.3', { zone: 'us-1', region: 'us', port: 8003 }),
  instance('d', '2001:db8::4', { zone: 'eu-1', region: 'eu', port: 8004 }),
  instance('e', 'api.example.com', { zone: 'us-1', region: 'us', port: 8005 }),
  instance('f', '10.0.0.6', { status: 'DOWN' }),
  instance('g', '10.0.0.7', { group: 'blue', port: 8007 }),
  instance('h', 'fe80::8%eth0', { status: 'DOWN' }),
];

describe('DNS records', () => {
  it('answers A and ANY for a service of 200,000 addresses (more than a call takes as arguments)', () => {
    const many = Array.from({ length: 200_000 }, (_, i) => instance(`i-${i}`, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`));
    expect(serviceRecords('A', OWNER, view(many), lookup(), context).answers).toHaveLength(200_000);
    expect(serviceRecords('ANY', OWNER, view(many), lookup(), context).answers).toHaveLength(200_000);
  });

  it('answers A with the UP instances whose host is an IPv4 address, and AAAA with the IPv6 ones', () => {
    const a = serviceRecords('A', OWNER, view(fleet), lookup(), context);
    expect(a.rcode).toBe(RCODE.NOERROR);
    expect(a.answers.map((answer) => dataOf(answer))).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.7']);
    expect(a.answers.every((answer) => answer.name === OWNER && answer.type === 'A' && 'ttl' in answer && answer.ttl === 5)).toBe(true);
    expect(serviceRecords('AAAA', OWNER, view(fleet), lookup(), context).answers.map((answer) => dataOf(answer))).toEqual(['2001:db8::4']);
  });

  it('gives instances sharing a host targets of their own, and leaves an IPv6 zone index out', () => {
    const shared = [instance('a', '127.0.0.1', { port: 1 }), instance('b', '127.0.0.1', { port: 2 }), instance('c', 'FE80::1%eth0', { port: 3 })];
    const srv = serviceRecords('SRV', OWNER, view(shared), lookup(), context);
    expect(srv.answers.map((answer) => (dataOf(answer) as { target: string }).target)).toEqual(['7f000001-1.addr.registry.', '7f000001-2.addr.registry.', 'fe800000000000000000000000000001-3.addr.registry.']);
    expect(srv.additionals.map((record) => dataOf(record))).toEqual(['127.0.0.1', '127.0.0.1', 'fe80::1']);
    expect(serviceRecords('AAAA', OWNER, view(shared), lookup(), context).answers.map((answer) => dataOf(answer))).toEqual(['fe80::1']);
  });

  it('rotates the A records by the second the view was built', () => {
    const at = (ms: number) => serviceRecords('A', OWNER, view(fleet, ms), lookup(), context).answers.map((answer) => dataOf(answer));
    expect(at(1_000)).toEqual(['10.0.0.2', '10.0.0.3', '10.0.0.7', '10.0.0.1']);
    expect(at(1_999)).toEqual(at(1_000));
    expect(at(4_000)).toEqual(at(0));
  });

  it('answers A near a zone with the nearest instances only: the zone, else its region', () => {
    const near = (zone: string) => serviceRecords('A', OWNER, view(fleet), lookup({ zone }), context).answers.map((answer) => dataOf(answer));
    expect(near('eu-1')).toEqual(['10.0.0.1']);
    expect(near('eu-2')).toEqual(['10.0.0.2']);
    expect(near('us-1')).toEqual(['10.0.0.3']);
  });

  it('answers SRV with port, weight, zone priority and an address target resolved in the additional section', () => {
    const srv = serviceRecords('SRV', OWNER, view(fleet), lookup({ zone: 'eu-1' }), context);
    expect(srv.answers.map((answer) => dataOf(answer))).toEqual([
      { priority: PRIORITY.zone, weight: 3, port: 8001, target: '0a000001-8001.addr.registry.' },
      { priority: PRIORITY.region, weight: 1, port: 8002, target: '0a000002-8002.addr.registry.' },
      { priority: PRIORITY.other, weight: 1, port: 8003, target: '0a000003-8003.addr.registry.' },
      { priority: PRIORITY.zone, weight: 1, port: 8004, target: '20010db8000000000000000000000004-8004.addr.registry.' },
      { priority: PRIORITY.other, weight: 1, port: 8005, target: 'api.example.com' },
      { priority: PRIORITY.other, weight: 1, port: 8007, target: '0a000007-8007.addr.registry.' },
    ]);
    expect(srv.additionals.map((record) => [record.name, record.type, dataOf(record)])).toEqual([
      ['0a000001-8001.addr.registry.', 'A', '10.0.0.1'],
      ['0a000002-8002.addr.registry.', 'A', '10.0.0.2'],
      ['0a000003-8003.addr.registry.', 'A', '10.0.0.3'],
      ['20010db8000000000000000000000004-8004.addr.registry.', 'AAAA', '2001:db8::4'],
      ['0a000007-8007.addr.registry.', 'A', '10.0.0.7'],
    ]);
    const plain = serviceRecords('SRV', OWNER, view(fleet), lookup(), context);
    expect(plain.answers.every((answer) => (dataOf(answer) as { priority: number }).priority === 0)).toBe(true);
  });

  it('keeps one group when asked, and its name exists only while it has UP instances', () => {
    expect(serviceRecords('A', OWNER, view(fleet), lookup({ group: 'blue' }), context).answers.map((answer) => dataOf(answer))).toEqual(['10.0.0.7']);
    const none = serviceRecords('A', OWNER, view(fleet), lookup({ group: 'green' }), context);
    expect(none.rcode).toBe(RCODE.NXDOMAIN);
    expect(none.authorities[0]).toMatchObject({ type: 'SOA', name: 'registry.', data: { minimum: 5, serial: 7 } });
    expect(serviceRecords('A', OWNER, view([instance('x', '10.0.0.9', { status: 'DOWN' })]), lookup(), context).rcode).toBe(RCODE.NXDOMAIN);
    expect(serviceRecords('SRV', OWNER, view(fleet), lookup({ zone: 'mars' }), context).rcode).toBe(RCODE.NXDOMAIN);
  });

  it('answers NODATA (no record, the SOA) for a type the name has none of', () => {
    const onlyNames = serviceRecords('A', OWNER, view([instance('e', 'api.example.com')]), lookup(), context);
    expect(onlyNames).toMatchObject({ rcode: RCODE.NOERROR, answers: [] });
    expect(onlyNames.authorities[0]!.type).toBe('SOA');
    expect(serviceRecords('OTHER', OWNER, view(fleet), lookup(), context)).toMatchObject({ rcode: RCODE.NOERROR, answers: [] });
  });

  it('answers TXT with the instance, zone, group, port and metadata as key=value strings', () => {
    const long = 'x'.repeat(300);
    const txt = serviceRecords('TXT', OWNER, view([instance('a', '10.0.0.1', { zone: 'eu-1', metadata: { version: '1.2', long, colour: 'red' } })]), lookup(), context);
    expect(dataOf(txt.answers[0]!)).toEqual(['instance=a', 'zone=eu-1', 'group=DEFAULT_GROUP', 'port=8000', 'colour=red', 'version=1.2']);
  });

  it.each([
    [0, 0],
    [0.2, 1],
    [1, 1],
    [2.5, 3],
    [70_000, 65_535],
  ])('an instance weight %d is SRV weight %d', (weight, expected) => {
    expect(srvWeight(weight)).toBe(expected);
  });
});
