import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';
import { parsePrometheusText, type Family, sampleValue } from '../support/prom-text.js';

/**
 * The DNS listener's series in a real peer's /metrics, moved by real `dig` queries (issue 37):
 * queries by transport, type and response code, UDP answers truncated, requests by transport
 * and outcome, and a TCP connection held in the pool `connections`.
 */
const DIG = '/usr/bin/dig';
const inCi = process.env.CI === 'true';
const run = promisify(execFile);
let peer: PeerProcess;
let dnsPort: number;

beforeAll(async () => {
  peer = await startPeerProcess(['--host', '127.0.0.1', '--port', '0', '--profile', 'local', '--dns-port', '0', '--log-level', 'info']);
  const listening = await waitFor(() => peer.logs.find((line) => line.msg === 'dns listening'), 30_000, 'the dns listener');
  dnsPort = Number(listening.port);
}, 60_000);

afterAll(async () => {
  peer?.kill();
  await peer?.exited;
});

async function dig(...args: string[]): Promise<string> {
  const { stdout } = await run(DIG, ['@127.0.0.1', '-p', String(dnsPort), '+time=2', '+tries=2', ...args], { timeout: 20_000 });
  return stdout;
}
async function scrape(): Promise<Map<string, Family>> {
  const response = await request(`${peer.url}/metrics`);
  expect(response.statusCode).toBe(200);
  return parsePrometheusText(await response.body.text());
}
const value = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}) => sampleValue(families, name, labels) ?? 0;

describe.skipIf(!existsSync(DIG) && !inCi)('the DNS listener in /metrics, through dig', () => {
  it('counts queries by transport, type and rcode, truncations over UDP, and requests by outcome', async () => {
    expect((await callJson('POST', `${peer.url}/v1/instances`, { service: 'web', host: '10.0.0.1', port: 80, leaseDurationMs: 600_000 })).status).toBe(201);
    for (let i = 0; i < 40; i++) {
      expect((await callJson('POST', `${peer.url}/v1/instances`, { service: 'big', host: `10.2.0.${i + 1}`, port: 7000 + i, leaseDurationMs: 600_000 })).status).toBe(201);
    }
    const before = await scrape();
    expect(await dig('web.service.registry', 'A', '+short')).toContain('10.0.0.1');
    expect(await dig('nothing.service.registry', 'A')).toContain('status: NXDOMAIN');
    expect(await dig('web.service.registry', 'SRV', '+tcp')).toContain('status: NOERROR');
    // 40 SRV records do not fit in 512 bytes (no EDNS0): sent truncated, and dig is told not to retry.
    expect(await dig('big.service.registry', 'SRV', '+noedns', '+ignore', '+notcp')).toMatch(/flags: qr aa tc/);
    const after = await scrape();
    const moved = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
    expect(moved('registry_dns_queries_total', { transport: 'udp', type: 'A', rcode: 'NOERROR' })).toBe(1);
    expect(moved('registry_dns_queries_total', { transport: 'udp', type: 'A', rcode: 'NXDOMAIN' })).toBe(1);
    expect(moved('registry_dns_queries_total', { transport: 'tcp', type: 'SRV', rcode: 'NOERROR' })).toBe(1);
    expect(moved('registry_dns_queries_total', { transport: 'udp', type: 'SRV', rcode: 'NOERROR' })).toBe(1);
    expect(moved('registry_dns_udp_truncated_total')).toBe(1);
    expect(moved('registry_adapter_requests_total', { adapter: 'dns', operation: 'udp query', outcome: 'ok' })).toBe(3);
    expect(moved('registry_adapter_requests_total', { adapter: 'dns', operation: 'tcp query', outcome: 'ok' })).toBe(1);
    expect(moved('registry_adapter_request_duration_seconds_count', { adapter: 'dns', operation: 'udp query', outcome: 'ok' })).toBe(3);
  });

  it('shows an open TCP connection in the pool connections until it closes', async () => {
    const socket: Socket = connect(dnsPort, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    try {
      await waitFor(async () => value(await scrape(), 'registry_adapter_held', { adapter: 'dns', pool: 'connections' }) === 1, 10_000, 'the connection to be held');
      const families = await scrape();
      expect(families.get('registry_adapter_held_by_principal')!.samples.some((s) => s.labels.adapter === 'dns' && s.labels.pool === 'connections' && s.labels.principal === 'address:127.0.0.1' && s.value === 1)).toBe(true);
    } finally {
      socket.destroy();
    }
    await waitFor(async () => value(await scrape(), 'registry_adapter_held', { adapter: 'dns', pool: 'connections' }) === 0, 10_000, 'the connection to be given back');
  });
});
