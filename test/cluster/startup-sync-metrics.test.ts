import { afterEach, describe, expect, it } from 'vitest';
import { NodeMetrics } from '../../src/metrics/node-metrics.js';
import { instance, TestCluster } from '../support/cluster.js';
import { parsePrometheusText, sampleValue } from '../support/prom-text.js';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

async function scrape(metrics: NodeMetrics) {
  try {
    return parsePrometheusText(await metrics.scrape());
  } finally {
    metrics.stop();
  }
}

describe('the start-up sync in /metrics', () => {
  it('says how long a restarted peer took to catch up, and how many records it pulled', async () => {
    const seed = 37;
    // 20 ms each way: the snapshot stream alone takes a round trip and a link delay per frame.
    cluster = new TestCluster({ size: 2, seed, latencyMs: 20 });
    await cluster.start();
    const first = await scrape(new NodeMetrics(cluster.node('peer-b')));
    // Both started together: whoever synced from the other found it empty.
    expect(sampleValue(first, 'registry_startup_sync_records', {}), `seed ${seed}`).toBe(0);
    for (let i = 0; i < 300; i++) cluster.node('peer-a').registry.register(instance(`i-${i}`, { service: `svc-${i % 30}` }));
    await cluster.advance(2_000);
    expect(cluster.converged(), `seed ${seed}`).toBe(true);

    cluster.crash('peer-b');
    const restarted = await cluster.restart('peer-b');
    const after = await scrape(new NodeMetrics(restarted));
    expect(sampleValue(after, 'registry_startup_sync_records', {}), `seed ${seed}`).toBe(300);
    const seconds = sampleValue(after, 'registry_startup_sync_seconds', {})!;
    expect(seconds).toBe(restarted.bootstrapDurationMs! / 1000);
    // Request, start frame, one records frame, end frame; then the anti-entropy round.
    expect(seconds, `seed ${seed}`).toBeGreaterThanOrEqual((4 * 20) / 1000);
    expect(seconds, `seed ${seed}`).toBeLessThan(10);
  });

  it('leaves both series out until the sync is done', async () => {
    cluster = new TestCluster({ size: 1, seed: 1 });
    const metrics = await scrape(new NodeMetrics(cluster.node('peer-a')));
    expect(metrics.get('registry_startup_sync_seconds')!.samples).toEqual([]);
    expect(metrics.get('registry_startup_sync_records')!.samples).toEqual([]);
  });
});
