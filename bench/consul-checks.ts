/**
 * Check updates for unknown check ids beside a heartbeat-like probe (issue 33, finding 6): a
 * peer holding `--instances` Consul instances (default 20,000, in 100 services) takes
 * `PUT /v1/agent/check/pass/<unknown id>` at 80 requests a second from one client for
 * `--seconds` (default 10), while `GET /healthz` is asked every 20 ms. A peer that walks the
 * namespace for each unknown id delays every other request on its event loop; one that looks
 * the id up does not. Reports /healthz latency before and during the load.
 * `npx tsx bench/consul-checks.ts [--main PATH/dist/main.js] [--instances N] [--seconds S]`
 * (after `npm run build`); `--main` runs another build's peer to compare.
 */
import { Pool, request } from 'undici';
import { freePort } from '../test/support/fault-proxy.js';
import { percentile, progress, round, runBounded, sleep, writeResult } from './lib.js';
import { startPeer } from './processes.js';

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}

const PROBE_EVERY_MS = 20;
const CHECKS_PER_SECOND = 80;

/** Asks /healthz every PROBE_EVERY_MS until `stop()`; answers the latencies. */
function probe(url: string): { stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const response = await request(`${url}/healthz`);
      await response.body.dump();
      latencies.push(performance.now() - t0);
      await sleep(PROBE_EVERY_MS);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return latencies;
    },
  };
}

const summary = (values: number[]) => ({ p50Ms: round(percentile(values, 0.5), 1), p99Ms: round(percentile(values, 0.99), 1), maxMs: round(Math.max(...values), 1), samples: values.length });

export async function benchConsulChecks(options: { instances: number; seconds: number; main?: string }) {
  const consulPort = await freePort();
  const peer = await startPeer('consul-checks-peer', { pinned: false, logLevel: 'warn', extraArgs: ['--consul-port', String(consulPort)], ...(options.main ? { main: options.main } : {}) });
  const consul = new Pool(`http://127.0.0.1:${consulPort}`, { connections: 32 });
  try {
    const registered = await runBounded(options.instances, 32, 300_000, async (i) => {
      const response = await consul.request({
        method: 'PUT',
        path: '/v1/agent/service/register',
        body: JSON.stringify({ Name: `svc-${i % 100}`, ID: `id-${i}`, Address: '10.0.0.1', Port: 1_000 + (i % 50_000), Check: { TTL: '10m', Status: 'passing' } }),
      });
      await response.body.dump();
      if (response.statusCode !== 200) throw new Error(`register answered ${response.statusCode}`);
    }, 'register');
    progress(`consul-checks: ${registered.done} instances registered (${registered.errors} errors) in ${round(registered.elapsedMs / 1_000, 1)} s`);
    await sleep(2_000);
    const idle = probe(peer.url);
    await sleep(3_000);
    const healthzIdle = await idle.stop();
    const loaded = probe(peer.url);
    const checkLatencies: number[] = [];
    const statuses = new Map<number, number>();
    const total = CHECKS_PER_SECOND * options.seconds;
    const startedMs = performance.now();
    const inFlight: Promise<void>[] = [];
    for (let k = 0; k < total; k++) {
      // Paced at 80 a second from one client, whatever the answers take (an open-loop load).
      const dueMs = startedMs + (k * 1_000) / CHECKS_PER_SECOND;
      const waitMs = dueMs - performance.now();
      if (waitMs > 0) await sleep(waitMs);
      inFlight.push(
        (async () => {
          const t0 = performance.now();
          const response = await consul.request({ method: 'PUT', path: `/v1/agent/check/pass/unknown-check-${k}` });
          await response.body.dump();
          checkLatencies.push(performance.now() - t0);
          statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
        })(),
      );
    }
    await Promise.all(inFlight);
    const healthzLoaded = await loaded.stop();
    const result = {
      instances: registered.done,
      checksPerSecond: CHECKS_PER_SECOND,
      seconds: options.seconds,
      checkStatuses: Object.fromEntries(statuses),
      checkLatency: summary(checkLatencies),
      healthzIdle: summary(healthzIdle),
      healthzUnderLoad: summary(healthzLoaded),
      main: options.main ?? 'dist/main.js',
    };
    progress(`consul-checks: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await consul.close();
    await peer.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const main = argument('--main');
  const result = await benchConsulChecks({ instances: Number(argument('--instances') ?? 20_000), seconds: Number(argument('--seconds') ?? 10), ...(main ? { main } : {}) });
  progress(`written to ${writeResult('consul-checks', result)}`);
}
