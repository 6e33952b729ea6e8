/**
 * CPU time one peer spends per request, for a fixed number of requests of each route: the
 * figure behind the single-peer finding in bench/findings.md. Unlike a throughput ratio it
 * hardly depends on what else the machine runs, so two builds can be compared one after the
 * other (alternate them, and run each more than once).
 *
 *   npm run build && npx tsx bench/cpu-per-request.ts [--dist /path/to/other/checkout/dist] [--no-config] [--reference [--minimal-answer]] [--route NAME]
 *
 * `--route register` (repeatable) measures only the routes named.
 *
 * `--reference` measures the bare fastify server of bench/reference-server.ts instead (the
 * reference of the single-peer ratios), so the peer's figures can be set against it;
 * `--reference --minimal-answer` the same server answering its stored fields only (the
 * reference before it answered the peer's shape and size).
 *
 * `--bare-fastify` measures discover on a bare fastify route sending the very bytes the peer
 * answered for one seeded service (the stack's ceiling of bench/read-scale.ts): what fastify
 * and the socket cost per request, so that the rest of the peer's figure is the peer's own work.
 *
 * `--no-config` starts the peer without the config file that switches the rate limit off, for
 * builds older than the rate limit (they do not know the setting).
 *
 * Starts `node <dist>/main.js` on 127.0.0.1 (bench/processes.ts: rate limit off, log level info,
 * its log in bench/out/), seeds 1,000
 * instances, then per route: a warm-up pass and a measured pass of 60,000 requests, 32 in
 * flight; prints user+system CPU of the peer process (from /proc) per request. Linux only.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Pool } from 'undici';
import { pool, runBounded, type JsonCall } from './lib.js';
import { startBareFastify, startPeer, startReference, totalCpuMsOf as cpuMs, type ServerProcess } from './processes.js';

const REQUESTS = 60_000;
const IN_FLIGHT = 32;
const SEEDED = 1_000;
/** Bounds each pass in time as well as in count. */
const PASS_MAX_MS = 300_000;

type Route = 'register' | 'heartbeat' | 'discover';

/** Seeded instances go to `svc-*` (20 each, what discover lists); measured registers to `reg-*`. */
function callOf(route: Route, n: number): JsonCall {
  const k = n % SEEDED;
  if (route === 'register') {
    const prefix = n < SEEDED ? 'svc' : 'reg';
    const body = { service: `${prefix}-${n % 50}`, instanceId: `i-${n}`, host: '10.0.0.1', port: 1 + (n % 60_000), leaseDurationMs: 600_000, metadata: { a: '1', b: '2', c: '3', d: '4', e: '5' } };
    return { method: 'POST', path: '/v1/instances', body };
  }
  if (route === 'heartbeat') return { method: 'PUT', path: `/v1/services/svc-${k % 50}/instances/i-${k}/heartbeat` };
  return { method: 'GET', path: `/v1/services/svc-${k % 50}` }; // 20 instances each
}

/** `count` calls from `first` on, `IN_FLIGHT` at a time; every one must succeed. */
async function pass(target: Pool, route: Route, first: number, count: number): Promise<void> {
  const run = await runBounded(count, IN_FLIGHT, PASS_MAX_MS, async (i) => {
    const call = callOf(route, first + i);
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    const answer = await target.request({ method: call.method, path: call.path, headers: body ? { 'content-type': 'application/json' } : {}, body });
    // Dropped, not decoded (lib's `send` reads it as text): the load generator's own CPU moves
    // what the peer pays to wake it on a two-core machine, so it stays as light as it was.
    await answer.body.dump();
    if (answer.statusCode >= 300) throw new Error(`${route} answered ${answer.statusCode}`);
  });
  if (run.errors > 0 || run.done < count) throw new Error(`${route}: ${run.done} of ${count} calls succeeded (${run.errors} failed)`);
}

async function main(): Promise<void> {
  const distArg = process.argv.indexOf('--dist');
  const entry = distArg > 0 ? join(resolve(process.argv[distArg + 1]!), 'main.js') : 'dist/main.js';
  const reference = process.argv.includes('--reference');
  const bareFastify = process.argv.includes('--bare-fastify');
  const startThePeer = () => startPeer('cpu-peer', { pinned: false, main: entry, unlimited: !process.argv.includes('--no-config'), logLevel: process.env.LOG_LEVEL ?? 'info' });
  const minimalAnswer = process.argv.includes('--minimal-answer');
  let server: ServerProcess = reference ? await startReference('cpu-reference', { pinned: false, minimalAnswer }) : await startThePeer();
  let target = pool(server.url, IN_FLIGHT);
  try {
    await pass(target, 'register', 0, SEEDED);
    if (bareFastify) {
      const answer = await target.request({ method: 'GET', path: callOf('discover', 0).path });
      const file = join(tmpdir(), `cpu-per-request-${process.pid}.json`);
      writeFileSync(file, Buffer.from(await answer.body.arrayBuffer()));
      await target.close();
      await server.stop();
      server = await startBareFastify(file, false);
      target = pool(server.url, IN_FLIGHT);
    }
    const what = reference ? 'reference: bench/reference-server.ts' : bareFastify ? "bare fastify sending one peer's discover answer" : `peer: ${entry}`;
    console.log(`${what} (pid ${server.pid}); ${REQUESTS} requests per route, ${IN_FLIGHT} in flight`);
    // Registers of new instances only (a re-register of the same data is a lease renewal).
    let fresh = SEEDED;
    const named = process.argv.flatMap((arg, i) => (process.argv[i - 1] === '--route' ? [arg as Route] : []));
    const routes = bareFastify ? (['discover'] as Route[]) : named.length > 0 ? named : (['register', 'heartbeat', 'discover'] as Route[]);
    for (const route of routes) {
      await pass(target, route, fresh, REQUESTS); // warm-up
      if (route === 'register') fresh += REQUESTS;
      const before = cpuMs(server.pid);
      const started = performance.now();
      await pass(target, route, fresh, REQUESTS);
      if (route === 'register') fresh += REQUESTS;
      const usPerRequest = ((cpuMs(server.pid) - before) * 1_000) / REQUESTS;
      const perSecond = REQUESTS / ((performance.now() - started) / 1_000);
      console.log(`${route.padEnd(9)} ${usPerRequest.toFixed(1)} µs of peer CPU per request (${Math.round(perSecond)}/s)`);
    }
  } finally {
    await target.close();
    await server.stop();
  }
}

await main();
