import { describe, expect, it } from 'vitest';
import { addressName, lowerAscii, nameParser, type Lookup } from '../../../src/dns/names.js';

const parser = nameParser({ domain: 'registry.', namespaces: ['default', 'team-a', 'eu.prod'] });
const service = (extra: Partial<Extract<Lookup, { kind: 'service' }>> = {}): Lookup => ({ kind: 'service', namespace: 'default', service: 'web', zone: null, group: null, ...extra });

describe('DNS names', () => {
  it.each<[string, Lookup]>([
    ['registry', { kind: 'apex' }],
    ['registry.', { kind: 'apex' }],
    ['example.com', { kind: 'outside' }],
    ['notregistry', { kind: 'outside' }],
    ['web.service.registry', service()],
    ['web.service.registry.', service()],
    ['web.service.default.registry', service()],
    ['web.service.team-a.registry', service({ namespace: 'team-a' })],
    ['web.service.eu.prod.registry', service({ namespace: 'eu.prod' })],
    ['z1.web.service.registry', service({ zone: 'z1' })],
    ['blue.group.web.service.registry', service({ group: 'blue' })],
    ['z1.blue.group.web.service.team-a.registry', service({ namespace: 'team-a', zone: 'z1', group: 'blue' })],
    ['group.web.service.registry', service({ zone: 'group' })],
    ['_web._tcp.service.registry', service()],
    ['_web._udp.service.team-a.registry', service({ namespace: 'team-a' })],
    ['_._tcp.service.registry', { kind: 'unknown' }],
    ['a.b.web.service.registry', { kind: 'unknown' }],
    ['service.registry', { kind: 'unknown' }],
    ['web.service.secret.registry', { kind: 'unknown' }],
    ['web.registry', { kind: 'unknown' }],
    ['0a000005.addr.registry', { kind: 'address', address: '10.0.0.5', family: 4 }],
    ['20010db8000000000000000000000001.addr.registry', { kind: 'address', address: '2001:0db8:0000:0000:0000:0000:0000:0001', family: 6 }],
    ['0a000005-8080.addr.registry', { kind: 'address', address: '10.0.0.5', family: 4 }],
    ['0a000005-.addr.registry', { kind: 'unknown' }],
    ['0a000005-80-1.addr.registry', { kind: 'unknown' }],
    ['0a0000.addr.registry', { kind: 'unknown' }],
    ['zz000005.addr.registry', { kind: 'unknown' }],
  ])('%s', (name, expected) => {
    expect(parser.parse(name)).toEqual(expected);
  });

  it('does not answer the default form when the default namespace is not served', () => {
    const teamOnly = nameParser({ domain: 'svc.example.com.', namespaces: ['team-a'] });
    expect(teamOnly.parse('web.service.svc.example.com')).toEqual({ kind: 'unknown' });
    expect(teamOnly.parse('web.service.team-a.svc.example.com')).toEqual(service({ namespace: 'team-a' }));
    expect(teamOnly.parse('web.service.registry')).toEqual({ kind: 'outside' });
  });

  it('keeps the configured case of a namespace while matching it lower-cased', () => {
    expect(nameParser({ domain: 'registry.', namespaces: ['Team'] }).parse('web.service.team.registry')).toEqual(service({ namespace: 'Team' }));
  });

  it('lower-cases ASCII only (RFC 4343) and names nothing with other bytes', () => {
    expect(lowerAscii('WeB.Service.REGISTRY')).toBe('web.service.registry');
    expect(lowerAscii('wéb.service.registry')).toBeNull();
  });

  it.each<[string, 4 | 6, string]>([
    ['10.0.0.5', 4, '0a000005.addr.registry.'],
    ['255.1.0.16', 4, 'ff010010.addr.registry.'],
    ['::1', 6, '00000000000000000000000000000001.addr.registry.'],
    ['2001:db8::8:1', 6, '20010db8000000000000000000080001.addr.registry.'],
    ['fe80::', 6, 'fe800000000000000000000000000000.addr.registry.'],
    ['::ffff:10.0.0.5', 6, '00000000000000000000ffff0a000005.addr.registry.'],
  ])('names the address %s as an SRV target', (address, family, name) => {
    expect(addressName(address, family, 'registry.')).toBe(name);
    expect(addressName(address, family, 'registry.', 8080)).toBe(name.replace('.addr.', '-8080.addr.'));
    const parsed = parser.parse(name.slice(0, -1));
    expect(parsed.kind).toBe('address');
  });
});
