/**
 * CPU time one peer spends per request, for a fixed number of requests of each route: the
 * figure behind the single-peer finding in bench/findings.md. Unlike a throughput ratio it
 * hardly depends on what else the machine runs, so two builds can be compared one after the
 * other (alternate them, and run each more than once).
 *
 *   npm run build && npx tsx bench/cpu-per-request.ts [--dist /path/to/other/checkout/dist] [--no-config] [--reference] [--route NAME]
 *
 * `--route register` (repeatable) measures only the routes named.
 *
 * `--reference` measures the bare fastify server of bench/reference-server.ts instead (the
 * reference of the single-peer ratios), so the peer's figures can be set against it.
 *
 * `--no-config` starts the peer without the config file that switches the rate limit off, for
 * builds older than the rate limit (they do not know the setting).
 *
 * Starts `node <dist>/main.js` on 127.0.0.1 (rate limit off, log level info), seeds 1,000
 * instances, then per route: a warm-up pass and a measured pass of 60,000 requests, 32 in
 * flight; prints user+system CPU of the peer process (from /proc) per request. Linux only.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { freePort } from '../test/support/fault-proxy.js';
import { waitFor } from '../test/support/process.js';

const REQUESTS = 60_000;
const IN_FLIGHT = 32;
const SEEDED = 1_000;
const distArg = process.argv.indexOf('--dist');
const dist = distArg > 0 ? resolve(process.argv[distArg + 1]!) : fileURLToPath(new URL('../dist/', import.meta.url));

/** CPU time (user + system) of a process so far, in ms (Linux clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Seeded instances go to `svc-*` (20 each, what discover lists); measured registers to `reg-*`. */
const body = (n: number, prefix = n < SEEDED ? 'svc' : 'reg') =>
  JSON.stringify({ service: `${prefix}-${n % 50}`, instanceId: `i-${n}`, host: '10.0.0.1', port: 1 + (n % 60_000), leaseDurationMs: 600_000, metadata: { a: '1', b: '2', c: '3', d: '4', e: '5' } });

type Route = 'register' | 'heartbeat' | 'discover';

async function call(pool: Pool, route: Route, n: number): Promise<void> {
  const k = n % SEEDED;
  const answer =
    route === 'register'
      ? await pool.request({ method: 'POST', path: '/v1/instances', headers: { 'content-type': 'application/json' }, body: body(n) })
      : route === 'heartbeat'
        ? await pool.request({ method: 'PUT', path: `/v1/services/svc-${k % 50}/instances/i-${k}/heartbeat` })
        : await pool.request({ method: 'GET', path: `/v1/services/svc-${k % 50}` }); // 20 instances each
  await answer.body.dump();
  if (answer.statusCode >= 300) throw new Error(`${route} answered ${answer.statusCode}`);
}

/** `count` calls from `first` on, `IN_FLIGHT` at a time. */
async function pass(pool: Pool, route: Route, first: number, count: number): Promise<void> {
  let next = first;
  const worker = async () => {
    while (next < first + count) await call(pool, route, next++);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'registry-cpu-'));
  const config = join(dir, 'peer.json');
  writeFileSync(config, JSON.stringify({ limits: { rateLimitPerSecond: 0 } }));
  const port = await freePort();
  const configArgs = process.argv.includes('--no-config') ? [] : ['--config', config];
  const reference = process.argv.includes('--reference');
  const args = reference
    ? ['--import', 'tsx', fileURLToPath(new URL('./reference-server.ts', import.meta.url)), String(port)]
    : [join(dist, 'main.js'), ...configArgs, '--port', String(port), '--host', '127.0.0.1', '--log-level', process.env.LOG_LEVEL ?? 'info'];
  const peer = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: IN_FLIGHT });
  try {
    await waitFor(async () => (await pool.request({ method: 'GET', path: reference ? '/healthz' : '/readyz' }).then(async (r) => (await r.body.dump(), r.statusCode), () => 0)) === 200, 20_000, 'the peer to be ready');
    await pass(pool, 'register', 0, SEEDED);
    console.log(`${reference ? 'reference' : 'peer'}: ${args.at(reference ? 2 : 0)} (pid ${peer.pid}); ${REQUESTS} requests per route, ${IN_FLIGHT} in flight`);
    // Registers of new instances only (a re-register of the same data is a lease renewal).
    let fresh = SEEDED;
    const named = process.argv.flatMap((arg, i) => (process.argv[i - 1] === '--route' ? [arg as Route] : []));
    for (const route of named.length > 0 ? named : (['register', 'heartbeat', 'discover'] as Route[])) {
      await pass(pool, route, fresh, REQUESTS); // warm-up
      if (route === 'register') fresh += REQUESTS;
      const before = cpuMs(peer.pid!);
      const started = performance.now();
      await pass(pool, route, fresh, REQUESTS);
      if (route === 'register') fresh += REQUESTS;
      const usPerRequest = ((cpuMs(peer.pid!) - before) * 1_000) / REQUESTS;
      const perSecond = REQUESTS / ((performance.now() - started) / 1_000);
      console.log(`${route.padEnd(9)} ${usPerRequest.toFixed(1)} µs of peer CPU per request (${Math.round(perSecond)}/s)`);
    }
  } finally {
    await pool.close();
    peer.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
