import dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { DNS_DEFAULTS } from '../../../src/config/protocols.js';
import { DnsLimits, MAX_TCP_CONNECTIONS, TCP_SHARE_PER_SOURCE } from '../../../src/dns/limits.js';
import { refusal, truncation } from '../../../src/dns/responder.js';
import { FakeClock } from '../../support/fake-clock.js';

const defaults = { rateLimitPerSecond: DNS_DEFAULTS.rateLimitPerSecond, rateLimitBurst: DNS_DEFAULTS.rateLimitBurst, rateLimitLoopbackPerSecond: DNS_DEFAULTS.rateLimitLoopbackPerSecond };

/** Queries `address` sends at `perSecond` for `seconds`; how many were let through. */
async function send(limits: DnsLimits, clock: FakeClock, address: string, perSecond: number, seconds: number): Promise<number> {
  let allowed = 0;
  for (let s = 0; s < seconds; s++) {
    for (let i = 0; i < perSecond; i++) if (limits.query(address)) allowed += 1;
    await clock.advance(1_000);
  }
  return allowed;
}

describe('DNS per-source query rate', () => {
  it('never refuses resolvers at a busy resolver rate, and holds a flood from one source to its rate', async () => {
    const clock = new FakeClock();
    const limits = new DnsLimits(clock, defaults);
    // Ten resolvers, each at 1,000 queries/s (a cache in front of thousands of clients), for 10 s.
    for (let r = 1; r <= 10; r++) expect(await send(limits, clock, `10.0.0.${r}`, 1_000, 10)).toBe(10_000);
    // One source sending 50,000 queries/s for 10 s gets its burst and its rate, no more.
    const flood = await send(limits, clock, '10.9.9.9', 50_000, 10);
    expect(flood).toBeLessThanOrEqual(DNS_DEFAULTS.rateLimitBurst + 10 * DNS_DEFAULTS.rateLimitPerSecond);
    expect(flood).toBeGreaterThanOrEqual(DNS_DEFAULTS.rateLimitBurst + 9 * DNS_DEFAULTS.rateLimitPerSecond);
    // ... and a newcomer beside the flood is still let through in full.
    expect(await send(limits, clock, '10.0.0.77', 1_000, 2)).toBe(2_000);
  });

  it('leaves loopback sources unlimited by default, limited when configured', async () => {
    const clock = new FakeClock();
    expect(await send(new DnsLimits(clock, defaults), clock, '127.0.0.1', 50_000, 2)).toBe(100_000);
    const limited = new DnsLimits(clock, { ...defaults, rateLimitLoopbackPerSecond: 100, rateLimitBurst: 100 });
    expect(await send(limited, clock, '::1', 1_000, 2)).toBeLessThanOrEqual(200);
  });

  it('switches off with rateLimitPerSecond 0', async () => {
    const clock = new FakeClock();
    expect(await send(new DnsLimits(clock, { ...defaults, rateLimitPerSecond: 0 }), clock, '10.0.0.1', 50_000, 1)).toBe(50_000);
  });
});

describe('DNS TCP connection share per source', () => {
  it('one source holding its share leaves room for another; a released slot is free again', () => {
    const limits = new DnsLimits(new FakeClock(), defaults);
    const share = Math.floor(MAX_TCP_CONNECTIONS * TCP_SHARE_PER_SOURCE);
    const held = Array.from({ length: share }, () => limits.connection('10.0.0.1'));
    expect(held.every((slot) => slot.held)).toBe(true);
    const refused = limits.connection('10.0.0.1');
    expect(refused).toMatchObject({ held: false, cap: 'principal' });
    expect(limits.connection('10.0.0.2').held).toBe(true);
    const first = held[0]!;
    if (first.held) first.release();
    expect(limits.connection('10.0.0.1').held).toBe(true);
  });

  it('the whole peer holds at most MAX_TCP_CONNECTIONS', () => {
    const limits = new DnsLimits(new FakeClock(), defaults);
    for (let i = 0; i < MAX_TCP_CONNECTIONS; i++) expect(limits.connection(`10.1.${Math.floor(i / 50)}.${i % 50}`).held).toBe(true);
    expect(limits.connection('10.2.0.1')).toMatchObject({ held: false, cap: 'peer' });
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
