import dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { AdapterMetrics } from '../../../src/metrics/adapter-metrics.js';
import { DnsMetrics, queryTypeOf } from '../../../src/dns/metrics.js';
import { refusal, truncation } from '../../../src/dns/responder.js';

const query = (name: string, type: string) => dnsPacket.encode({ type: 'query', id: 7, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type: type as 'A' }] });

describe('DNS metrics from the bytes already there', () => {
  it('reads the QTYPE past the question name; -1 for a message without a whole question', () => {
    expect(queryTypeOf(query('web.service.registry', 'A'))).toBe(1);
    expect(queryTypeOf(query('_api._tcp.service.registry', 'SRV'))).toBe(33);
    expect(queryTypeOf(query('x', 'AAAA'))).toBe(28);
    const whole = query('web.service.registry', 'A');
    expect(queryTypeOf(whole.subarray(0, whole.length - 3))).toBe(-1);
    expect(queryTypeOf(whole.subarray(0, 12))).toBe(-1);
    // A label length that runs past the end, or a compression pointer (never in a query): other.
    expect(queryTypeOf(Buffer.concat([whole.subarray(0, 12), Buffer.from([0xc0, 0x0c, 0, 1, 0, 1])]))).toBe(-1);
    expect(queryTypeOf(Buffer.concat([whole.subarray(0, 12), Buffer.from([63, 1, 2])]))).toBe(-1);
  });

  it('counts an answer by transport, type and rcode, a UDP truncation, and the request by its outcome', () => {
    let nowMs = 0;
    const metrics = new AdapterMetrics({ monotonicMs: () => nowMs, nowMs: () => nowMs });
    const dns = new DnsMetrics(metrics);
    const message = query('web.service.registry', 'SRV');
    let startedMs = dns.start('udp');
    nowMs += 2;
    dns.answered('udp', message, refusal(message), startedMs);
    startedMs = dns.start('udp');
    dns.answered('udp', message, truncation(message), startedMs, 'limited');
    dns.answered('tcp', message, null, dns.start('tcp'), 'error');
    dns.answered('tcp', message, null, dns.start('tcp'));
    expect([...metrics.dns.entries()]).toEqual([
      { transport: 'udp', type: 'SRV', rcode: 'NOERROR', count: 1 },
      { transport: 'udp', type: 'SRV', rcode: 'REFUSED', count: 1 },
    ]);
    expect(metrics.dns.truncated).toBe(1);
    const recorders = metrics.adapter('dns');
    expect(recorders.operation('udp query').count('forbidden')).toBe(1);
    expect(recorders.operation('udp query').sums[3]).toBeCloseTo(0.002, 9);
    expect(recorders.operation('udp query').count('limited')).toBe(1);
    // A message that got no answer is counted only when its outcome is known (a failure).
    expect(recorders.totals().requests).toBe(3);
  });
});
