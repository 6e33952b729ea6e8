/**
 * Replication benchmark (issue 3's targets), three real peers on 127.0.0.1, each link through
 * a counting TCP proxy:
 *   1. write-to-visible latency on the other peers at 1,000 writes/s (target p99 < 100 ms);
 *   2. bytes between two peers while 100,000 instances heartbeat and nothing else changes
 *      (target < 10 KB/s per pair);
 *   3. time for all peers to agree after a partition left 1% of 100,000 records divergent
 *      (target < 2 s).
 * Run: npm run build && npx tsx bench/replication.ts [--quick]
 */
import { RealCluster } from '../test/support/real-cluster.js';

/** One load generator is one client: the rate limit would measure itself, not the registry. */
const UNLIMITED = { limits: { rateLimitPerSecond: 0 } };
import { getJson, percentile, pool, progress, quick, round, runAtRate, runBounded, send, sleep, table, writeResult } from './lib.js';

const INSTANCES = quick ? 10_000 : 100_000;
const LATENCY_SECONDS = quick ? 3 : 10;
const IDLE_SECONDS = quick ? 8 : 30;
const HEARTBEAT_RATE = quick ? 500 : 2_000;

interface ClusterBody {
  self: { digest: string; records: number };
  inbound: { delayMs: { count: number; p50Ms: number; p99Ms: number; maxMs: number } };
  antiEntropy: { keysPulled: number; keysPushed: number };
}

const registerBody = (i: number, leaseDurationMs: number) => ({
  service: `svc-${i % 100}`,
  host: '10.0.0.1',
  port: 1 + (i % 60_000),
  instanceId: `i-${i}`,
  leaseDurationMs,
  metadata: { a: 'x', b: 'y', c: 'z', d: 'w', e: 'v' },
});

async function main(): Promise<void> {
  progress(`starting 3 peers (${quick ? 'quick' : 'full'} run)`);
  const cluster = await RealCluster.start({ size: 3, file: UNLIMITED, cluster: { profile: 'lan' }, args: ['--log-level', 'warn'] });
  const [a, b, c] = cluster.ids as [string, string, string];
  const pools = new Map(cluster.ids.map((id) => [id, pool(cluster.url(id))]));
  const status = (id: string) => getJson<ClusterBody>(`${cluster.url(id)}/v1/cluster`);
  const results: Record<string, unknown> = { instances: INSTANCES, quick };
  try {
    // 1. Latency at 1,000 writes/s on peer-a, seen on peer-b and peer-c.
    progress(`latency: ${LATENCY_SECONDS} s of 1,000 writes/s on ${a}`);
    const before = await Promise.all([b, c].map(status));
    const probeDelays: number[] = [];
    const writes = await runAtRate(1_000, LATENCY_SECONDS * 1_000, 256, async (i) => {
      const sentAt = performance.now();
      const answer = await send(pools.get(a)!, { method: 'POST', path: '/v1/instances', body: registerBody(i, 600_000) });
      if (answer.status !== 201) throw new Error(`register answered ${answer.status}`);
      if (i % 100 !== 0) return;
      // Cross-check one write in 100 by polling peer-b until it lists it.
      for (let attempt = 0; attempt < 1_000; attempt++) {
        const seen = await send(pools.get(b)!, { method: 'GET', path: `/v1/services/svc-${i % 100}/instances/i-${i}` });
        if (seen.status === 200) {
          probeDelays.push(performance.now() - sentAt);
          return;
        }
        await sleep(1);
      }
    });
    await sleep(500);
    const after = await Promise.all([b, c].map(status));
    const receiverDelay = after.map((body, i) => ({
      peer: [b, c][i]!,
      samples: body.inbound.delayMs.count - before[i]!.inbound.delayMs.count,
      p50Ms: body.inbound.delayMs.p50Ms,
      p99Ms: body.inbound.delayMs.p99Ms,
      maxMs: body.inbound.delayMs.maxMs,
    }));
    results.latency = {
      writesSent: writes.sent,
      errors: writes.errors,
      skipped: writes.skipped,
      receiverDelay,
      polledP50Ms: round(percentile(probeDelays, 0.5)),
      polledP99Ms: round(percentile(probeDelays, 0.99)),
      polledSamples: probeDelays.length,
      p99Ms: Math.max(...receiverDelay.map((r) => r.p99Ms)),
      targetP99Ms: 100,
    };
    progress(`latency: ${JSON.stringify(results.latency)}`);

    // 2. Load the registry to INSTANCES (spread over the peers), then measure idle traffic.
    progress(`loading ${INSTANCES} instances`);
    const load = await runBounded(
      INSTANCES,
      48,
      300_000,
      async (i) => {
        const owner = cluster.ids[i % 3]!;
        const answer = await send(pools.get(owner)!, { method: 'POST', path: '/v1/instances', body: registerBody(i, 120_000) });
        if (answer.status !== 201 && answer.status !== 200) throw new Error(`register answered ${answer.status}`);
      },
      'load',
    );
    progress(`loaded ${load.done} in ${round(load.elapsedMs / 1_000)} s (${load.errors} errors); waiting for the peers to agree`);
    const agreeStarted = performance.now();
    for (;;) {
      const digests = new Set((await Promise.all(cluster.ids.map(status))).map((body) => body.self.digest));
      if (digests.size === 1) break;
      if (performance.now() - agreeStarted > 120_000) throw new Error('peers did not agree after the load');
      await sleep(200);
    }

    progress(`idle traffic: ${IDLE_SECONDS} s of heartbeats at ${HEARTBEAT_RATE}/s, no other change`);
    const bytesBefore = [...cluster.proxies].map(([link, proxy]) => [link, proxy.traffic.upBytes + proxy.traffic.downBytes] as const);
    const idleStarted = performance.now();
    const beats = await runAtRate(HEARTBEAT_RATE, IDLE_SECONDS * 1_000, 512, async (n) => {
      const i = n % INSTANCES;
      const owner = cluster.ids[i % 3]!;
      const answer = await send(pools.get(owner)!, { method: 'PUT', path: `/v1/services/svc-${i % 100}/instances/i-${i}/heartbeat` });
      if (answer.status !== 200) throw new Error(`heartbeat answered ${answer.status}`);
    });
    const idleSeconds = (performance.now() - idleStarted) / 1_000;
    const perPair = new Map<string, number>();
    for (const [link, bytes] of bytesBefore) {
      const [from, to] = link.split('->') as [string, string];
      const pair = [from, to].sort().join('<->');
      const proxy = cluster.proxies.get(link)!;
      perPair.set(pair, (perPair.get(pair) ?? 0) + proxy.traffic.upBytes + proxy.traffic.downBytes - bytes);
    }
    const pairs = [...perPair].map(([pair, bytes]) => ({ pair, bytesPerSecond: round(bytes / idleSeconds) }));
    results.idle = {
      heartbeatsSent: beats.sent,
      heartbeatErrors: beats.errors,
      heartbeatsPerSecond: round(beats.sent / idleSeconds),
      seconds: round(idleSeconds),
      pairs,
      maxBytesPerSecond: Math.max(...pairs.map((p) => p.bytesPerSecond)),
      targetBytesPerSecond: 10_000,
    };
    progress(`idle: ${JSON.stringify(results.idle)}`);

    // 3. Partition peer-a from the others, make 1% of the records diverge, heal, time the agreement.
    const divergent = Math.round(INSTANCES / 100);
    progress(`partition: ${a} cut off; ${divergent} records changed across both sides`);
    const pulledBefore = (await Promise.all(cluster.ids.map(status))).reduce((sum, body) => sum + body.antiEntropy.keysPulled + body.antiEntropy.keysPushed, 0);
    cluster.partition([a], [b, c]);
    await sleep(1_000);
    await runBounded(divergent, 32, 120_000, async (n) => {
      // Half the changes on each side, on instances owned by that side.
      const onA = n % 2 === 0;
      const i = onA ? n * 3 : n * 3 + 1;
      const peer = onA ? a : b;
      const answer = await send(pools.get(peer)!, {
        method: 'PUT',
        path: `/v1/services/svc-${i % 100}/instances/i-${i}/status`,
        body: { status: 'OUT_OF_SERVICE' },
      });
      if (answer.status !== 200) throw new Error(`status answered ${answer.status}`);
    });
    await sleep(6_000);
    const roots = new Set((await Promise.all(cluster.ids.map(status))).map((body) => body.self.digest));
    if (roots.size === 1) throw new Error('the partition did not make the peers diverge');
    cluster.heal();
    const healedAt = performance.now();
    let convergedMs = Number.NaN;
    while (performance.now() - healedAt < 60_000) {
      const digests = new Set((await Promise.all(cluster.ids.map(status))).map((body) => body.self.digest));
      if (digests.size === 1) {
        convergedMs = performance.now() - healedAt;
        break;
      }
      await sleep(20);
    }
    const pulledAfter = (await Promise.all(cluster.ids.map(status))).reduce((sum, body) => sum + body.antiEntropy.keysPulled + body.antiEntropy.keysPushed, 0);
    results.convergence = {
      records: INSTANCES,
      divergent,
      convergedMs: round(convergedMs),
      keysRepairedByAntiEntropy: pulledAfter - pulledBefore,
      targetMs: 2_000,
    };
    progress(`convergence: ${JSON.stringify(results.convergence)}`);
  } finally {
    for (const target of pools.values()) await target.close();
    await cluster.stop();
  }

  const latency = results.latency as { p99Ms: number; polledP99Ms: number };
  const idle = results.idle as { maxBytesPerSecond: number; heartbeatsPerSecond: number };
  const convergence = results.convergence as { convergedMs: number };
  console.log(
    `\n${table([
      { figure: 'write-to-visible p99 at 1,000 writes/s (receiver side)', value: `${latency.p99Ms} ms`, target: '< 100 ms', met: latency.p99Ms < 100 ? 'yes' : 'NO' },
      { figure: 'write-to-visible p99 (polled, 1 write in 100)', value: `${latency.polledP99Ms} ms`, target: '< 100 ms', met: latency.polledP99Ms < 100 ? 'yes' : 'NO' },
      { figure: `idle bytes/s between two peers, ${INSTANCES} instances, ${idle.heartbeatsPerSecond} heartbeats/s`, value: `${idle.maxBytesPerSecond} B/s`, target: '< 10,000 B/s', met: idle.maxBytesPerSecond < 10_000 ? 'yes' : 'NO' },
      { figure: `agreement after a heal, ${INSTANCES} records, 1% divergent`, value: `${convergence.convergedMs} ms`, target: '< 2,000 ms', met: convergence.convergedMs < 2_000 ? 'yes' : 'NO' },
    ])}`,
  );
  console.log(`\nresults: ${writeResult(quick ? 'replication-quick' : 'replication', results)}`);
}

await main();
