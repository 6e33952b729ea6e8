import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';
import { parsePrometheusText, sampleValue, type Family } from '../support/prom-text.js';
import { greeterClient, startGreeter, xdsPortOf, type GreeterServer } from '../support/xds.js';

/**
 * The xDS adapter's series in a real peer's /metrics, moved by the real proxyless client
 * @grpc/grpc-js-xds resolving `xds:///greeter` (issue 37): its ADS stream held in the pool
 * `streams`, its DiscoveryRequests counted, its ACKs by resource type, and a change pushed to
 * it with the time from the change. In its own file: grpc-js-xds registers process-wide
 * resolvers and reads its bootstrap once per process.
 */
const require = createRequire(import.meta.url);
let peer: PeerProcess;
let dir: string;
const greeters: GreeterServer[] = [];
let client: ReturnType<typeof greeterClient> | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registry-xds-metrics-'));
  const configFile = join(dir, 'config.json');
  await writeFile(configFile, JSON.stringify({ xds: { port: 0 } }));
  peer = await startPeerProcess(['--config', configFile, '--port', '0']);
  for (const name of ['m1', 'm2']) greeters.push(await startGreeter(name));
  const bootstrap = {
    xds_servers: [{ server_uri: `127.0.0.1:${await xdsPortOf(peer)}`, channel_creds: [{ type: 'insecure' }], server_features: [] }],
    node: { id: 'metrics-client', cluster: 'e2e', locality: {} },
  };
  await writeFile(join(dir, 'bootstrap.json'), JSON.stringify(bootstrap));
  process.env.GRPC_XDS_BOOTSTRAP = join(dir, 'bootstrap.json');
  (require('@grpc/grpc-js-xds') as { register(): void }).register();
}, 120_000);

afterAll(async () => {
  client?.client.close();
  for (const greeter of greeters) greeter.close();
  peer?.kill();
  await peer?.exited;
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function scrape(): Promise<Map<string, Family>> {
  const response = await request(`${peer.url}/metrics`);
  expect(response.statusCode).toBe(200);
  return parsePrometheusText(await response.body.text());
}
const value = (families: Map<string, Family>, name: string, labels: Record<string, string>) => sampleValue(families, name, labels) ?? 0;

async function register(greeter: GreeterServer): Promise<void> {
  const { status } = await callJson('POST', `${peer.url}/v1/instances`, { service: 'greeter', host: '127.0.0.1', port: greeter.port, instanceId: greeter.name, leaseDurationMs: 300_000 });
  expect([200, 201]).toContain(status);
}

/** Until calls through the client reach exactly these greeters. */
async function untilServedBy(names: string[]): Promise<void> {
  client ??= greeterClient('xds:///greeter');
  const hello = client.hello;
  const wanted = [...names].sort().join(',');
  await waitFor(
    async () => {
      const seen = new Set<string>();
      for (let i = 0; i < 20; i++) seen.add(await hello().catch(() => ''));
      return [...seen].sort().join(',') === wanted;
    },
    30_000,
    `calls to reach exactly ${wanted}`,
  );
}

describe('the xDS adapter in /metrics, through @grpc/grpc-js-xds', () => {
  it('shows the client stream held, its requests and ACKs by type, and a change pushed to it', async () => {
    const [m1, m2] = greeters as [GreeterServer, GreeterServer];
    await register(m1);
    await untilServedBy(['m1']);
    let families = await scrape();
    expect(value(families, 'registry_adapter_held', { adapter: 'xds', pool: 'streams' })).toBe(1);
    expect(families.get('registry_adapter_held_by_principal')!.samples.some((s) => s.labels.adapter === 'xds' && s.labels.pool === 'streams' && s.value === 1)).toBe(true);
    // The client asked for a Listener, a Cluster and its endpoints, and acknowledged each.
    expect(value(families, 'registry_adapter_requests_total', { adapter: 'xds', operation: 'StreamAggregatedResources', outcome: 'ok' })).toBeGreaterThanOrEqual(6);
    for (const type of ['listener', 'cluster', 'endpoint']) expect(value(families, 'registry_xds_acks_total', { type })).toBeGreaterThanOrEqual(1);
    expect(value(families, 'registry_xds_nacks_total', { type: 'endpoint' })).toBe(0);
    const pushesBefore = value(families, 'registry_adapter_pushes_total', { adapter: 'xds' });
    const endpointAcksBefore = value(families, 'registry_xds_acks_total', { type: 'endpoint' });

    await register(m2);
    await untilServedBy(['m1', 'm2']);
    families = await scrape();
    expect(value(families, 'registry_adapter_pushes_total', { adapter: 'xds' })).toBeGreaterThan(pushesBefore);
    expect(value(families, 'registry_adapter_push_delay_seconds_count', { adapter: 'xds' })).toBeGreaterThanOrEqual(1);
    // A push is timed from the change, the coalescing window (xds.pushCoalesceMs, 50 ms by default) included: none under 25 ms.
    expect(value(families, 'registry_adapter_push_delay_seconds_bucket', { adapter: 'xds', le: '0.025' })).toBe(0);
    expect(value(families, 'registry_adapter_push_delay_seconds_sum', { adapter: 'xds' })).toBeGreaterThanOrEqual(0.05 * value(families, 'registry_adapter_push_delay_seconds_count', { adapter: 'xds' }) - 0.001);
    expect(value(families, 'registry_xds_acks_total', { type: 'endpoint' })).toBeGreaterThan(endpointAcksBefore);
  }, 90_000);
});
