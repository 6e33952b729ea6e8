import dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { LimitsPort } from '../../../src/adapters/limits.js';
import { DnsLimits, MAX_TCP_CONNECTIONS } from '../../../src/dns/limits.js';
import { refusal, truncation } from '../../../src/dns/responder.js';
import { principalCapOf } from '../../../src/security/held-shares.js';
import { FakeClock } from '../../support/fake-clock.js';
import { testConfig } from '../../support/node.js';

/** DnsLimits on a limits port of the peer's settings (`limits.*` in `file`), as a peer makes them. */
function limitsOf(clock: FakeClock, file: Record<string, unknown> = {}): { dns: DnsLimits; port: LimitsPort; ratio: number } {
  const config = testConfig(file);
  const port = new LimitsPort(clock, config.limits);
  return { dns: new DnsLimits(clock, config.protocols.dns, port), port, ratio: config.limits.heldSharePerPrincipalRatio };
}

/** Queries `address` sends at `perSecond` for `seconds` (`udp` or `tcp`); how many were let through. */
async function send(limits: DnsLimits, clock: FakeClock, address: string, perSecond: number, seconds: number, transport: 'udp' | 'tcp' = 'udp'): Promise<number> {
  let allowed = 0;
  for (let s = 0; s < seconds; s++) {
    for (let i = 0; i < perSecond; i++) if (transport === 'udp' ? limits.udpQuery(address) : limits.tcpQuery(address)) allowed += 1;
    await clock.advance(1_000);
  }
  return allowed;
}

describe('DNS per-source query rate', () => {
  it('never refuses resolvers at a busy resolver rate, and holds a UDP flood from one source to dns.udpRateLimitPerSecond', async () => {
    const clock = new FakeClock();
    const { dns } = limitsOf(clock);
    // Ten resolvers, each at 1,000 queries/s (a cache in front of thousands of clients), for 10 s.
    for (let r = 1; r <= 10; r++) expect(await send(dns, clock, `10.0.0.${r}`, 1_000, 10)).toBe(10_000);
    // One source sending 50,000 UDP queries/s for 10 s gets the burst (4,000) and the rate (2,000/s), no more.
    const flood = await send(dns, clock, '10.9.9.9', 50_000, 10);
    expect(flood).toBeLessThanOrEqual(4_000 + 10 * 2_000);
    expect(flood).toBeGreaterThanOrEqual(4_000 + 9 * 2_000);
    // ... and a newcomer beside the flood is still let through in full.
    expect(await send(dns, clock, '10.0.0.77', 1_000, 2)).toBe(2_000);
  });

  it('counts every query, UDP and TCP, in the peer-wide limit the address has on every protocol', async () => {
    const clock = new FakeClock();
    const { dns, port } = limitsOf(clock, { limits: { rateLimitPerSecond: 100, rateLimitBurst: 100 }, dns: { udpRateLimitPerSecond: 0 } });
    let allowed = 0;
    for (let i = 0; i < 1_000; i++) if (dns.tcpQuery('10.0.0.1')) allowed += 1;
    expect(allowed).toBe(100);
    // The same address is now past its budget on HTTP too: one budget, whatever the protocol.
    expect(port.rate({ address: '10.0.0.1' })?.code).toBe('REG_ERR_RATE_LIMITED');
    expect(await send(dns, clock, '10.0.0.2', 1_000, 1, 'udp')).toBe(100);
  });

  it('leaves loopback sources out of the UDP amplification limit (they cannot be spoofed from the network); limits.rateLimitLoopbackPerSecond still counts them', async () => {
    const clock = new FakeClock();
    expect(await send(limitsOf(clock).dns, clock, '127.0.0.1', 50_000, 2)).toBe(100_000);
    const limited = limitsOf(clock, { limits: { rateLimitLoopbackPerSecond: 100, rateLimitBurst: 100 } }).dns;
    expect(await send(limited, clock, '::1', 1_000, 2)).toBeLessThanOrEqual(200);
  });

  it('switches the UDP limit off with udpRateLimitPerSecond 0', async () => {
    const clock = new FakeClock();
    const { dns } = limitsOf(clock, { dns: { udpRateLimitPerSecond: 0 }, limits: { rateLimitPerSecond: 0 } });
    expect(await send(dns, clock, '10.0.0.1', 50_000, 1)).toBe(50_000);
  });
});

describe('DNS TCP connection share per source', () => {
  it('one source holding its share (limits.heldSharePerPrincipalRatio) leaves room for another; a released slot is free again', () => {
    const { dns, ratio } = limitsOf(new FakeClock());
    const share = principalCapOf(MAX_TCP_CONNECTIONS, ratio);
    expect(share).toBeLessThan(MAX_TCP_CONNECTIONS);
    const held = Array.from({ length: share }, () => dns.connection('10.0.0.1'));
    expect(held.every((slot) => slot.held)).toBe(true);
    const refused = dns.connection('10.0.0.1');
    expect(refused).toMatchObject({ held: false, cap: 'principal' });
    expect(dns.connection('10.0.0.2').held).toBe(true);
    const first = held[0]!;
    if (first.held) first.release();
    expect(dns.connection('10.0.0.1').held).toBe(true);
  });

  it('the whole peer holds at most MAX_TCP_CONNECTIONS', () => {
    const { dns } = limitsOf(new FakeClock());
    for (let i = 0; i < MAX_TCP_CONNECTIONS; i++) expect(dns.connection(`10.1.${Math.floor(i / 50)}.${i % 50}`).held).toBe(true);
    expect(dns.connection('10.2.0.1')).toMatchObject({ held: false, cap: 'peer' });
  });
});

describe('answers to sources past their rate', () => {
  const query = dnsPacket.encode({ type: 'query', id: 77, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name: 'web.service.registry', type: 'TXT' }] });

  it('truncation: an empty answer with TC set, no bigger than the query', () => {
    const [answer] = truncation(query)!;
    const decoded = dnsPacket.decode(answer!);
    expect(decoded).toMatchObject({ id: 77, type: 'response', flag_tc: true, rcode: 'NOERROR', answers: [] });
    expect(answer!.length).toBeLessThanOrEqual(query.length);
  });

  it('refusal: REFUSED, no bigger than the query; a response is dropped', () => {
    const [answer] = refusal(query)!;
    expect(dnsPacket.decode(answer!)).toMatchObject({ id: 77, rcode: 'REFUSED', answers: [] });
    expect(answer!.length).toBeLessThanOrEqual(query.length);
    expect(truncation(answer!)).toBeNull();
  });
});
