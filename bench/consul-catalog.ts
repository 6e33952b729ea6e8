/**
 * Consul's whole-registry reads on one peer holding 100,000 instances in 100 services (docs/consul.md):
 * `GET /v1/catalog/services` (every service and its tags: what Spring Cloud Consul and
 * consul-template poll) read cold and then once a second, and `GET /v1/agent/services` (every
 * instance whose lease the peer holds: here all of them). While each read runs, a heartbeat
 * goes to the same peer every 5 ms from a connection of its own: the longest one says how long
 * the read held the peer's event loop. Reference, in the same run: the native
 * `GET /v1/services` (every service and its instance counts), read the same way.
 * Also a Consul health read of one 1,000-instance service once a second (its encoding is built
 * again at the first read a second after the last).
 * `npx tsx bench/consul-catalog.ts [--quick] [--main PATH/dist/main.js]` runs it alone (after
 * `npm run build`); `--main` runs another build's peer (a checkout of an older commit) to compare.
 */
import { request } from 'undici';
import { freePort } from '../test/support/fault-proxy.js';
import { percentile, pool, progress, quick, round, runBounded, send, sleep, writeResult } from './lib.js';
import { startPeer } from './processes.js';

export interface TimedRead {
  /** Time to the whole answer, in ms (median over the reads; `max` the slowest). */
  p50Ms: number;
  maxMs: number;
  /** The longest heartbeat round trip while the reads ran, in ms (a failed one counts until it failed). */
  heartbeatMaxMs: number;
  /** Heartbeats that failed meanwhile (a peer that held its loop past the request timeout resets them). */
  heartbeatErrors?: number;
  bytes: number;
  reads: number;
}

export interface ConsulCatalogResult {
  instances: number;
  services: number;
  /** `/v1/catalog/services`, the first read after loading (every service's tags built). */
  catalogCold: TimedRead;
  /** `/v1/catalog/services` once a second after that (past the 1 s life of a native view). */
  catalogWarm: TimedRead;
  /** `/v1/agent/services`, every instance being this peer's. */
  agentServices: TimedRead;
  /** `/v1/health/service/NAME` of one 1,000-instance service (100 in quick mode), once a second (absent from runs before it). */
  healthService?: TimedRead;
  /** The reference: native `GET /v1/services`, read like the warm catalog. */
  nativeServices: TimedRead;
}

const SERVICES = 100;
const HEARTBEAT_EVERY_MS = 5;

/** Reads `url` `reads` times, a second apart, with heartbeats to the peer meanwhile. */
async function timedReads(url: string, reads: number, heartbeat: () => Promise<void>): Promise<TimedRead> {
  const times: number[] = [];
  let heartbeatMaxMs = 0;
  let heartbeatErrors = 0;
  let bytes = 0;
  for (let r = 0; r < reads; r++) {
    let stop = false;
    const beats = (async () => {
      for (let n = 0; !stop && n < 20_000; n++) {
        const t0 = performance.now();
        await heartbeat().catch(() => (heartbeatErrors += 1));
        heartbeatMaxMs = Math.max(heartbeatMaxMs, performance.now() - t0);
        await sleep(HEARTBEAT_EVERY_MS);
      }
    })();
    let response: Awaited<ReturnType<typeof request>>;
    let body: ArrayBuffer;
    try {
      await sleep(20);
      const t0 = performance.now();
      response = await request(url, { headersTimeout: 120_000, bodyTimeout: 120_000 });
      body = await response.body.arrayBuffer();
      times.push(performance.now() - t0);
    } finally {
      // The heartbeats end with the read, whatever became of it.
      stop = true;
      await beats;
    }
    if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}`);
    bytes = body.byteLength;
    if (r < reads - 1) await sleep(1_100);
  }
  return { p50Ms: round(percentile(times, 0.5), 1), maxMs: round(Math.max(...times), 1), heartbeatMaxMs: round(heartbeatMaxMs, 1), heartbeatErrors, bytes, reads };
}

export async function benchConsulCatalog(options: { quick: boolean; main?: string }): Promise<ConsulCatalogResult> {
  const instances = options.quick ? 10_000 : 100_000;
  const consulPort = await freePort();
  const peer = await startPeer('consul-catalog-peer', { pinned: false, logLevel: 'warn', extraArgs: ['--consul-port', String(consulPort)], ...(options.main ? { main: options.main } : {}) });
  const writes = pool(peer.url, 32);
  const beats = pool(peer.url, 1);
  try {
    progress(`consul catalog: loading ${instances} instances in ${SERVICES} services`);
    const load = await runBounded(instances, 32, 300_000, async (i) => {
      const body = {
        service: `svc-${i % SERVICES}`,
        instanceId: `i-${i}`,
        host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
        port: 8080,
        leaseDurationMs: 600_000,
        metadata: { team: 'payments', 'consul.tags': JSON.stringify(['v1', `shard-${i % 4}`]) },
      };
      const answer = await send(writes, { method: 'POST', path: '/v1/instances', body });
      if (answer.status !== 201) throw new Error(`register answered ${answer.status}`);
    });
    if (load.done !== instances) throw new Error(`loaded only ${load.done} of ${instances} (${load.errors} errors)`);
    const heartbeat = async () => {
      const answer = await send(beats, { method: 'PUT', path: '/v1/services/svc-1/instances/i-1/heartbeat' });
      if (answer.status !== 200) throw new Error(`heartbeat answered ${answer.status}`);
    };
    await sleep(1_000);
    const consul = `http://127.0.0.1:${consulPort}`;
    const catalogCold = await timedReads(`${consul}/v1/catalog/services`, 1, heartbeat);
    await sleep(1_100);
    const catalogWarm = await timedReads(`${consul}/v1/catalog/services`, 5, heartbeat);
    const nativeServices = await timedReads(`${peer.url}/v1/services`, 5, heartbeat);
    const healthService = await timedReads(`${consul}/v1/health/service/svc-1`, 5, heartbeat);
    const agentServices = await timedReads(`${consul}/v1/agent/services`, options.quick ? 2 : 3, heartbeat);
    const result = { instances, services: SERVICES, catalogCold, catalogWarm, agentServices, healthService, nativeServices };
    progress(`consul catalog: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await writes.close();
    await beats.close();
    await peer.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const at = process.argv.indexOf('--main');
  const result = await benchConsulCatalog({ quick, ...(at > 0 && process.argv[at + 1] ? { main: process.argv[at + 1] } : {}) });
  progress(`written to ${writeResult('consul-catalog', result)}`);
}
