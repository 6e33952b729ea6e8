import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Consul from 'consul';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onFreshPorts } from '../support/ports.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';
import { parsePrometheusText, sampleValue, type Family } from '../support/prom-text.js';

/**
 * The Consul adapter's series in a real peer's /metrics, moved by the npm `consul` client
 * (issue 37): requests by route and outcome, the blocking-query pool held by a watch, a
 * blocking query refused at `consul.blockingQueriesMax`, and a watch woken by a change as a push.
 */
let peer: PeerProcess;
let consulPort: number;
let configDir: string;

beforeAll(async () => {
  configDir = mkdtempSync(join(tmpdir(), 'registry-consul-metrics-'));
  const configFile = join(configDir, 'config.json');
  // One blocking query for the whole peer: the second is refused at the peer's cap.
  writeFileSync(configFile, JSON.stringify({ consul: { blockingQueriesMax: 1 } }));
  peer = await onFreshPorts(1, async ([port]) => {
    consulPort = port!;
    return startPeerProcess(['--config', configFile, '--port', '0', '--consul-port', String(consulPort)]);
  });
  await waitFor(() => peer.logs.some((line) => line.msg === 'Consul API listening'), 60_000, 'the Consul listener');
});

afterAll(async () => {
  peer?.kill();
  await peer?.exited;
  if (configDir) rmSync(configDir, { recursive: true, force: true });
});

async function scrape(): Promise<Map<string, Family>> {
  const response = await request(`${peer.url}/metrics`);
  expect(response.statusCode).toBe(200);
  return parsePrometheusText(await response.body.text());
}
const value = (families: Map<string, Family>, name: string, labels: Record<string, string>) => sampleValue(families, name, labels) ?? 0;

describe('the Consul adapter in /metrics, through the npm consul client', () => {
  it('counts requests by route and outcome, shows a watch as a held blocking query, refuses one past the cap, and counts its wake as a push', async () => {
    const consul = new Consul({ host: '127.0.0.1', port: consulPort });
    await consul.agent.service.register({ name: 'web', id: 'web-1', address: '127.0.0.1', port: 8080, check: { ttl: '30s', status: 'passing' } } as never);
    expect(await consul.health.service({ service: 'web', passing: true })).toHaveLength(1);
    let families = await scrape();
    expect(value(families, 'registry_adapter_requests_total', { adapter: 'consul', operation: 'PUT /v1/agent/service/register', outcome: 'ok' })).toBe(1);
    expect(value(families, 'registry_adapter_requests_total', { adapter: 'consul', operation: 'GET /v1/health/service/:name', outcome: 'ok' })).toBe(1);
    expect(value(families, 'registry_adapter_request_duration_seconds_count', { adapter: 'consul', operation: 'GET /v1/health/service/:name', outcome: 'ok' })).toBe(1);
    expect(value(families, 'registry_adapter_held', { adapter: 'consul', pool: 'blocking_queries' })).toBe(0);

    const watch = consul.watch({ method: consul.health.service, options: { service: 'web', passing: true } as never });
    const changes: string[][] = [];
    watch.on('change', (data: { Service: { ID: string } }[]) => changes.push(data.map((entry) => entry.Service.ID).sort()));
    watch.on('error', () => undefined);
    try {
      await waitFor(() => changes.length >= 1, 10_000, 'the first watch answer');
      // The watch then holds a blocking query: the pool shows it, with its principal (loopback address).
      families = await waitFor(async () => {
        const scraped = await scrape();
        return value(scraped, 'registry_adapter_held', { adapter: 'consul', pool: 'blocking_queries' }) === 1 ? scraped : false;
      }, 10_000, 'the watch to be held');
      expect(families.get('registry_adapter_held_by_principal')!.samples.some((s) => s.labels.adapter === 'consul' && s.labels.pool === 'blocking_queries' && s.value === 1)).toBe(true);

      // A second blocking query is refused at the peer's cap of 1: a 429 the client reports.
      const index = Number((await request(`http://127.0.0.1:${consulPort}/v1/health/service/web`)).headers['x-consul-index']);
      const refused = await consul.health.service({ service: 'web', index: String(index), wait: '30s' } as never).then(
        () => null,
        (error: { statusCode?: number }) => error,
      );
      expect(refused?.statusCode).toBe(429);
      families = await scrape();
      expect(value(families, 'registry_adapter_held_refused_total', { adapter: 'consul', pool: 'blocking_queries', cap: 'peer' })).toBe(1);
      expect(value(families, 'registry_adapter_requests_total', { adapter: 'consul', operation: 'GET /v1/health/service/:name', outcome: 'limited' })).toBe(1);

      const pushesBefore = value(families, 'registry_adapter_pushes_total', { adapter: 'consul' });
      await consul.agent.service.register({ name: 'web', id: 'web-2', address: '127.0.0.1', port: 8081, check: { ttl: '30s', status: 'passing' } } as never);
      await waitFor(() => changes.some((ids) => ids.length === 2), 10_000, 'the watch to see web-2');
      families = await scrape();
      expect(value(families, 'registry_adapter_pushes_total', { adapter: 'consul' })).toBeGreaterThanOrEqual(pushesBefore + 1);
      expect(value(families, 'registry_adapter_push_delay_seconds_count', { adapter: 'consul' })).toBeGreaterThanOrEqual(1);
      // A wake is answered within the turn of the change: well under a second even on a loaded machine.
      expect(value(families, 'registry_adapter_push_delay_seconds_bucket', { adapter: 'consul', le: '1' })).toBe(value(families, 'registry_adapter_push_delay_seconds_count', { adapter: 'consul' }));
    } finally {
      watch.end();
    }
  }, 60_000);
});
