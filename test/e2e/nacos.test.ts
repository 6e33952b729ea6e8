import { NacosNamingClient } from 'nacos';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nacosPortsOf, quietNacosLogger } from '../support/nacos-process.js';
import { waitFor } from '../support/process.js';
import { parsePrometheusText, sampleValue } from '../support/prom-text.js';
import { RealCluster } from '../support/real-cluster.js';

/**
 * The npm `nacos` 2.6.3 client (Nacos 1.x: v1 HTTP, UDP push) against a two-peer cluster:
 * one client registers on peer-a, another subscribes on peer-b, and sees changes pushed
 * over UDP (well within its 10 s poll).
 */
type Host = { ip: string; port: number; weight: number; healthy: boolean; enabled: boolean; metadata: Record<string, string> };

let cluster: RealCluster;
const clients: NacosNamingClient[] = [];
const logger = quietNacosLogger();

async function clientOf(id: string): Promise<NacosNamingClient> {
  const { port } = await nacosPortsOf(cluster.peers.get(id)!);
  const client = new NacosNamingClient({ logger: logger as never, serverList: `127.0.0.1:${port}`, namespace: 'public' });
  clients.push(client);
  await client.ready();
  return client;
}

beforeAll(async () => {
  cluster = await RealCluster.start({ size: 2, args: ['--nacos-port', '0'] });
  await cluster.statusWithAllUp('peer-a');
}, 120_000);

afterAll(async () => {
  for (const client of clients) await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
  await cluster?.stop();
});

describe('npm nacos 2.6.3 on a two-peer cluster', () => {
  it('registers on one peer; a subscriber on the other gets the list, then changes by UDP push within 1 s', async () => {
    const writer = await clientOf('peer-a');
    const reader = await clientOf('peer-b');
    await writer.registerInstance('nacos-e2e', { ip: '127.0.0.1', port: 9001, weight: 2, metadata: { version: 'v1' } } as never);
    const seen: Host[][] = [];
    // Its first list (and its first poll, 1 s later) come before the change; pushes after.
    await waitFor(async () => (await reader.getAllInstances('nacos-e2e')).length === 1, 20_000, 'the instance on peer-b');
    reader.subscribe('nacos-e2e', (hosts: Host[]) => seen.push(hosts));
    await waitFor(() => seen.length > 0, 10_000, 'the subscription callback');
    expect(seen.at(-1)).toMatchObject([{ ip: '127.0.0.1', port: 9001, weight: 2, healthy: true, enabled: true, metadata: { version: 'v1' } }]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    const registeredAt = Date.now();
    await writer.registerInstance('nacos-e2e', { ip: '127.0.0.1', port: 9002, weight: 1, metadata: {} } as never);
    await waitFor(() => seen.at(-1)?.length === 2, 5_000, `a push with both instances (client log: ${logger.lines.slice(-5).join(' | ')})`);
    const pushedInMs = Date.now() - registeredAt;
    expect(pushedInMs).toBeLessThan(1_000);

    const all = (await reader.getAllInstances('nacos-e2e')) as unknown as Host[];
    expect(all.map((host) => host.port).sort()).toEqual([9001, 9002]);
    const healthy = (await reader.selectInstances('nacos-e2e', undefined, undefined, true)) as unknown as Host[];
    expect(healthy.map((host) => host.port).sort()).toEqual([9001, 9002]);

    const removedAt = Date.now();
    await writer.deregisterInstance('nacos-e2e', { ip: '127.0.0.1', port: 9002 } as never);
    await waitFor(() => seen.at(-1)?.length === 1, 5_000, 'a push without the deregistered instance');
    expect(Date.now() - removedAt).toBeLessThan(1_000);
    expect(seen.at(-1)![0]!.port).toBe(9001);

    // The adapter's series moved on both peers: the writer's registers, the reader's lists, its held push target and its pushes.
    const metricsOf = async (id: string) => parsePrometheusText(await (await request(`${cluster.url(id)}/metrics`)).body.text());
    const [a, b] = [await metricsOf('peer-a'), await metricsOf('peer-b')];
    expect(sampleValue(a, 'registry_adapter_requests_total', { adapter: 'nacos', operation: 'instance.register', outcome: 'ok' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(b, 'registry_adapter_requests_total', { adapter: 'nacos', operation: 'instance.list', outcome: 'ok' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(b, 'registry_adapter_held', { adapter: 'nacos', pool: 'udp_push_targets' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(b, 'registry_adapter_pushes_total', { adapter: 'nacos' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(b, 'registry_adapter_push_delay_seconds_count', { adapter: 'nacos' })).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('reports the server UP and lists services by page', async () => {
    const client = await clientOf('peer-a');
    expect(await client.getServerStatus()).toBe('UP');
    const page = await (client as unknown as { _serverProxy: { getServiceList(pageNo: number, pageSize: number, group: string): Promise<{ count: number; data: string[] }> } })._serverProxy.getServiceList(1, 10, 'DEFAULT_GROUP');
    expect(page.data).toContain('nacos-e2e');
  }, 30_000);
});
