/**
 * Multi-region benchmark (issue 11's targets): two regions of three real peers on 127.0.0.1,
 * every link through a counting TCP proxy that adds 80 ms each way between the regions, all
 * peers on the `wan` profile:
 *   1. a write in one region is visible in the other within 1 s at p99;
 *   2. steady cross-region traffic with 100,000 heartbeating instances stays under 5 KB/s per
 *      region pair (both directions, HTTP headers included, as counted on the wire).
 * Run: npm run build && npx tsx bench/multi-region.ts [--quick]
 */
import { RealCluster } from '../test/support/real-cluster.js';
import { writeFileSync } from 'node:fs';
import { writeResultsMarkdown } from './report.js';
import { getJson, percentile, pool, progress, quick, round, runAtRate, runBounded, send, sleep, table, writeResult } from './lib.js';

/** One load generator is one client: the rate limit would measure itself, not the registry. */
const UNLIMITED = { limits: { rateLimitPerSecond: 0 } };

const INSTANCES = quick ? 10_000 : 100_000;
const WRITES = quick ? 200 : 1_000;
const IDLE_SECONDS = quick ? 20 : 60;
const HEARTBEAT_RATE = quick ? 500 : 1_500;
const DELAY_MS = 80;

interface ClusterBody {
  self: { digest: string };
  inbound: { delayMs: { count: number; p50Ms: number; p99Ms: number; maxMs: number } };
}

async function main(): Promise<void> {
  progress(`starting 2 regions x 3 peers, +${DELAY_MS} ms each way between regions (${quick ? 'quick' : 'full'} run)`);
  const regions = ['eu', 'eu', 'eu', 'us', 'us', 'us'];
  const cluster = await RealCluster.start({ size: 6, file: UNLIMITED, regions, cluster: { profile: 'wan' }, args: ['--log-level', 'warn'] });
  const eu = cluster.ids.slice(0, 3);
  const us = cluster.ids.slice(3);
  const crossLinks = [...cluster.proxies].filter(([link]) => {
    const [from, to] = link.split('->') as [string, string];
    return cluster.regionOf(from) !== cluster.regionOf(to);
  });
  for (const [, proxy] of crossLinks) proxy.delayMs = DELAY_MS;
  const pools = new Map(cluster.ids.map((id) => [id, pool(cluster.url(id))]));
  const status = (id: string) => getJson<ClusterBody>(`${cluster.url(id)}/v1/cluster`);
  const startedAt = new Date().toISOString();
  const results: Record<string, unknown> = { instances: INSTANCES, crossRegionDelayMsEachWay: DELAY_MS, quick };
  try {
    // 1. Writes in eu, seen in us (receiver side: version time to apply time, same machine clock).
    progress(`cross-region visibility: ${WRITES} writes at 100/s in eu`);
    const before = await Promise.all(us.map(status));
    const polled: number[] = [];
    await runAtRate(100, (WRITES / 100) * 1_000, 64, async (i) => {
      const sentAt = performance.now();
      const answer = await send(pools.get(eu[i % 3]!)!, {
        method: 'POST',
        path: '/v1/instances',
        body: { service: 'xr', host: '10.0.0.1', port: 1 + i, instanceId: `xr-${i}`, leaseDurationMs: 600_000 },
      });
      if (answer.status !== 201) throw new Error(`register answered ${answer.status}`);
      if (i % 20 !== 0) return;
      for (let attempt = 0; attempt < 500; attempt++) {
        if ((await send(pools.get(us[0]!)!, { method: 'GET', path: `/v1/services/xr/instances/xr-${i}` })).status === 200) {
          polled.push(performance.now() - sentAt);
          return;
        }
        await sleep(2);
      }
    });
    await sleep(2_000);
    const after = await Promise.all(us.map(status));
    const receivers = after.map((body, i) => ({
      peer: us[i]!,
      samples: body.inbound.delayMs.count - before[i]!.inbound.delayMs.count,
      p50Ms: body.inbound.delayMs.p50Ms,
      p99Ms: body.inbound.delayMs.p99Ms,
    }));
    results.visibility = {
      receivers,
      p99Ms: Math.max(...receivers.map((r) => r.p99Ms)),
      polledP50Ms: round(percentile(polled, 0.5)),
      polledP99Ms: round(percentile(polled, 0.99)),
      polledSamples: polled.length,
      targetP99Ms: 1_000,
    };
    progress(`visibility: ${JSON.stringify(results.visibility)}`);

    // 2. Load INSTANCES over the six peers, wait for agreement, then count cross-region bytes
    // while the instances heartbeat and nothing else changes.
    progress(`loading ${INSTANCES} instances over the six peers`);
    const load = await runBounded(
      INSTANCES,
      48,
      400_000,
      async (i) => {
        const answer = await send(pools.get(cluster.ids[i % 6]!)!, {
          method: 'POST',
          path: '/v1/instances',
          body: { service: `svc-${i % 100}`, host: '10.0.0.1', port: 1 + (i % 60_000), instanceId: `i-${i}`, leaseDurationMs: 300_000, metadata: { a: 'x', b: 'y', c: 'z', d: 'w', e: 'v' } },
        });
        if (answer.status !== 201 && answer.status !== 200) throw new Error(`register answered ${answer.status}`);
      },
      'load',
    );
    progress(`loaded ${load.done} in ${round(load.elapsedMs / 1_000)} s; waiting for the regions to agree`);
    const agreeStarted = performance.now();
    for (;;) {
      const digests = new Set((await Promise.all(cluster.ids.map(status))).map((body) => body.self.digest));
      if (digests.size === 1) break;
      if (performance.now() - agreeStarted > 180_000) throw new Error('the regions did not agree after the load');
      await sleep(500);
    }
    // Let the batches of the load drain before counting.
    await sleep(5_000);
    progress(`steady state: ${IDLE_SECONDS} s of heartbeats at ${HEARTBEAT_RATE}/s`);
    const crossBytes = () => crossLinks.reduce((sum, [, proxy]) => sum + proxy.traffic.upBytes + proxy.traffic.downBytes, 0);
    const bytesBefore = crossBytes();
    const started = performance.now();
    const beats = await runAtRate(HEARTBEAT_RATE, IDLE_SECONDS * 1_000, 512, async (n) => {
      const i = n % INSTANCES;
      const answer = await send(pools.get(cluster.ids[i % 6]!)!, { method: 'PUT', path: `/v1/services/svc-${i % 100}/instances/i-${i}/heartbeat` });
      if (answer.status !== 200) throw new Error(`heartbeat answered ${answer.status}`);
    });
    const seconds = (performance.now() - started) / 1_000;
    const bytesPerSecond = round((crossBytes() - bytesBefore) / seconds);
    results.steady = {
      seconds: round(seconds),
      heartbeatsPerSecond: round(beats.sent / seconds),
      heartbeatErrors: beats.errors,
      crossRegionBytesPerSecond: bytesPerSecond,
      targetBytesPerSecond: 5_000,
    };
    progress(`steady: ${JSON.stringify(results.steady)}`);
  } finally {
    for (const target of pools.values()) await target.close();
    await cluster.stop();
  }

  const visibility = results.visibility as { p99Ms: number; polledP99Ms: number };
  const steady = results.steady as { crossRegionBytesPerSecond: number; heartbeatsPerSecond: number };
  console.log(
    `\n${table([
      { figure: `write in one region visible in the other, p99 (receiver side), +${DELAY_MS} ms each way`, value: `${visibility.p99Ms} ms`, target: '< 1,000 ms', met: visibility.p99Ms < 1_000 ? 'yes' : 'NO' },
      { figure: 'the same, polled (1 write in 20)', value: `${visibility.polledP99Ms} ms`, target: '< 1,000 ms', met: visibility.polledP99Ms < 1_000 ? 'yes' : 'NO' },
      { figure: `cross-region bytes/s, ${INSTANCES} instances, ${steady.heartbeatsPerSecond} heartbeats/s`, value: `${steady.crossRegionBytesPerSecond} B/s`, target: '< 5,000 B/s', met: steady.crossRegionBytesPerSecond < 5_000 ? 'yes' : 'NO' },
    ])}`,
  );
  console.log(`\nresults: ${writeResult(quick ? 'multi-region-quick' : 'multi-region', results)}`);
  if (!quick) {
    // Only a full run is recorded in bench/ (and so in RESULTS.md).
    const recorded = { at: startedAt, ...results };
    writeFileSync(new URL('./multi-region-results.json', import.meta.url), `${JSON.stringify(recorded, null, 2)}\n`);
    console.log(`recorded: bench/multi-region-results.json; page: ${writeResultsMarkdown()}`);
  }
}

await main();
