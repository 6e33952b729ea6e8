import { describe, expect, it } from 'vitest';
import { protocolLabel, protocolRows, rateText, registeredThrough, registrationsByService, type ProtocolsView } from '../../../src/ui/protocols.js';

const outcomes = { ok: 0, bad_input: 0, unauthenticated: 0, forbidden: 0, limited: 0, error: 0 };
const reading = (nowMs: number, loads: Record<string, [requests: number, refused: number, held: number]>): ProtocolsView => ({
  nowMs,
  listeners: [
    { protocol: 'native', label: 'Native /v1', on: true, address: 'http://127.0.0.1:8761/v1', transport: 'HTTP' },
    { protocol: 'dns', label: 'DNS', on: false, address: null, transport: 'UDP and TCP' },
  ],
  protocols: Object.entries(loads).map(([protocol, [requests, refused, held]]) => ({ protocol, requests, refused, refusedAtCap: 0, held, byOutcome: outcomes })),
  registering: [
    { protocol: 'consul', label: 'Consul' },
    { protocol: 'native', label: 'the native API' },
  ],
});

describe('the Protocols panel’s arithmetic', () => {
  it('has no rate on the first reading, then the growth over the time between two readings', () => {
    const first = reading(10_000, { native: [100, 0, 2], consul: [10, 1, 5] });
    expect(protocolRows(first, null).map((row) => [row.protocol, row.requestsPerSecond, row.held])).toEqual([
      ['native', null, 2], ['dns', null, 0], ['consul', null, 5],
    ]);
    const second = reading(12_000, { native: [300, 0, 3], consul: [16, 5, 5] });
    const rows = protocolRows(second, first);
    expect(rows.find((row) => row.protocol === 'native')).toMatchObject({ requestsPerSecond: 100, refusedPerSecond: 0, held: 3, listener: { on: true } });
    expect(rows.find((row) => row.protocol === 'consul')).toMatchObject({ requestsPerSecond: 3, refusedPerSecond: 2, listener: null });
    expect(rows.find((row) => row.protocol === 'dns')).toMatchObject({ requests: 0, requestsPerSecond: null, listener: { on: false } });
  });

  it('reads a restart of the peer (counts going back) as 0, not a negative rate', () => {
    const before = reading(10_000, { native: [500, 9, 0] });
    expect(protocolRows({ ...before, protocols: [{ ...before.protocols[0]!, refusedAtCap: 4 }] }, null)[0]).toMatchObject({ refused: 9, refusedAtCap: 4 });
    const after = reading(11_000, { native: [20, 0, 0] });
    expect(protocolRows(after, before)[0]).toMatchObject({ requestsPerSecond: 0, refusedPerSecond: 0 });
  });

  it('names a protocol as the peer does (no table of protocols in the page), its own name when the peer names it nowhere', () => {
    const view = reading(10_000, {});
    expect(['native', 'dns', 'consul', 'carrier-pigeon'].map((protocol) => protocolLabel(protocol, view))).toEqual(['the native API', 'DNS', 'Consul', 'carrier-pigeon']);
    expect(protocolLabel('dns', null)).toBe('dns');
  });

  it('writes rates briefly', () => {
    expect([null, 0, 0.25, 9.94, 12.4, 4_321].map(rateText)).toEqual(['-', '0', '0.3', '9.9', '12', '4,321']);
  });

  it('filters services by the protocol that registered some of their instances', () => {
    const counts = registrationsByService({ namespace: 'default', services: [{ service: 'Orders', protocols: { eureka: 2, native: 1 } }, { service: 'billing', protocols: { native: 3 } }] });
    expect(registeredThrough(counts, 'orders', 'eureka')).toBe(true);
    expect(registeredThrough(counts, 'billing', 'eureka')).toBe(false);
    expect(registeredThrough(counts, 'billing', '')).toBe(true);
    expect(registeredThrough(counts, 'unknown', 'native')).toBe(false);
  });
});
