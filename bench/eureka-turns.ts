/**
 * The longest turn of the event loop that the Eureka API's reads and writes take, in process,
 * on a peer of N instances (default 1,000,000) over S services (default 1,000): a ticker
 * (a setImmediate chain) runs meanwhile and the longest gap between two of its ticks is the
 * longest time anything else (a heartbeat) waited.
 *
 *   - full fetch, cold: `GET /eureka/apps` in JSON, then in XML (plain, not gzip), nothing
 *     built yet (the JSON fetch builds the services' views, the XML one only its own parts);
 *   - full fetch, warm: the same after one instance changed (every part kept but one);
 *   - register: `POST /eureka/apps/{app}` of a new instance (the lookup of the id it may
 *     already have), 20 times after one untimed (as each repeated request);
 *   - heartbeat of an unknown id: `PUT /eureka/apps/{app}/{id}` answered 404, 20 times;
 *   - `GET /eureka/vips/svc-7` (every instance of one service on the VIP: with few services, a
 *     large document), 5 times, against the same document built and stringified in one piece;
 *   - `GET /eureka/instances/{id}`: an id of the last service stored, and an unknown id, 20 times each.
 *
 * Routes through `app.inject()` (no socket); a full fetch's body is drained as a stream, as a
 * socket would take it. Beside each longest turn: the most CPU one turn used less the GC pauses
 * in it (our code's own work: a turn can also be long because a busy machine let the process
 * wait for a core, or because a collection fell in it), the longest GC pause, and the
 * operation's total time. Every figure is ms. The CPU figure is exact with GC on the main
 * thread in pauses only (the second command); compare a change by running this before and
 * after it on the same machine, as quiet as can be.
 *   npx tsx bench/eureka-turns.ts [--instances=1000000] [--services=1000]
 *   npx tsx --single-threaded-gc --no-incremental-marking bench/eureka-turns.ts ...
 */
import { availableParallelism, loadavg } from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { vipDocument } from '../src/eureka/documents.js';
import { record } from '../test/support/records.js';
import { createTestServer } from '../test/support/server.js';
import { round, table } from './lib.js';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const N = arg('instances', 1_000_000);
const S = arg('services', 1_000);
const REPEATS = 20;
const METADATA = { a: 'x', b: 'y', c: 'z' };

/** Garbage collection pauses (start, end in ms of performance.now), as the observer is told of them. */
const gcPauses: [number, number][] = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcPauses.push([entry.startTime, entry.startTime + entry.duration]);
}).observe({ entryTypes: ['gc'] });

interface Turns {
  longestMs: number;
  /**
   * The most CPU one turn used less the GC pauses in it: the work of our code alone, whether
   * the turn was also long because a busy machine let the process wait for a core or because a
   * collection ran in it (exact with --single-threaded-gc --no-incremental-marking, where all
   * GC work is in the pauses; otherwise GC helper threads and marking steps count too).
   */
  longestCodeMs: number;
  longestGcMs: number;
  totalMs: number;
}

/** The longest gap between two ticks of a setImmediate chain while `work` runs, the most CPU in one, and the longest GC pause. */
async function longestTurn(work: () => Promise<unknown>): Promise<Turns> {
  /** Each turn: its start and end (performance.now) and the CPU the process used in it. */
  const turns: [number, number, number][] = [];
  let lastMs = performance.now();
  let lastCpu = process.cpuUsage();
  let running = true;
  const endTurn = () => {
    const nowMs = performance.now();
    const cpu = process.cpuUsage(lastCpu);
    lastCpu = process.cpuUsage();
    turns.push([lastMs, nowMs, (cpu.user + cpu.system) / 1_000]);
    lastMs = nowMs;
  };
  const tick = () => {
    endTurn();
    if (running) setImmediate(tick);
  };
  gcPauses.length = 0;
  setImmediate(tick);
  const startMs = performance.now();
  await work();
  running = false;
  endTurn();
  const endMs = performance.now();
  // The observer is told after a pause: let it run, and the ticker stop.
  await new Promise((resolve) => setTimeout(resolve, 10));
  const pauses = gcPauses.filter(([, pauseEndMs]) => pauseEndMs >= startMs);
  let longestMs = 0;
  let longestCodeMs = 0;
  for (const [fromMs, toMs, cpuMs] of turns) {
    longestMs = Math.max(longestMs, toMs - fromMs);
    const gcMs = pauses.reduce((sum, [pauseStartMs, pauseEndMs]) => sum + Math.max(0, Math.min(toMs, pauseEndMs) - Math.max(fromMs, pauseStartMs)), 0);
    longestCodeMs = Math.max(longestCodeMs, cpuMs - gcMs);
  }
  const longestGcMs = Math.max(0, ...pauses.map(([fromMs, toMs]) => toMs - fromMs));
  return { longestMs: round(longestMs), longestCodeMs: round(longestCodeMs), longestGcMs: round(longestGcMs), totalMs: round(endMs - startMs) };
}

/** The request, with its body drained as a stream (a full fetch's is hundreds of MB). */
async function drained(app: FastifyInstance, options: { method?: 'GET' | 'POST' | 'PUT'; url: string; headers?: Record<string, string>; payload?: unknown }): Promise<number> {
  const response: LightMyRequestResponse = await app.inject({ ...options, payloadAsStream: true } as never);
  let bytes = 0;
  for await (const chunk of response.stream()) bytes += (chunk as Buffer).length;
  if (response.statusCode >= 500) throw new Error(`${options.url}: ${response.statusCode}`);
  return bytes;
}

const { node, clock, app } = await createTestServer();
const fillStartMs = performance.now();
for (let i = 0; i < N; i++) {
  const data = { host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, port: 1 + (i % 60_000), securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: METADATA };
  node.registry.applyRemote(record({ service: `svc-${i % S}`, instanceId: `i-${i}`, peerId: node.registry.peerId, wallMs: clock.nowMs(), data, leaseDurationMs: 60_000 }), 60_000);
}
process.stdout.write(`${N} instances over ${S} services stored in ${round((performance.now() - fillStartMs) / 1000)} s\n`);

const rows: Record<string, string | number>[] = [];
const measure = async (what: string, work: () => Promise<unknown>, repeats = 1) => {
  const all: Turns[] = [];
  // A repeated request is timed warm: one untimed first (the JIT compiles its code).
  if (repeats > 1) await work();
  for (let i = 0; i < repeats; i++) all.push(await longestTurn(work));
  const most = (field: keyof Turns) => Math.max(...all.map((turns) => turns[field]));
  const row = {
    what,
    'longest turn ms': most('longestMs'),
    'CPU less GC in a turn ms (most)': most('longestCodeMs'),
    'longest GC pause ms': most('longestGcMs'),
    'total ms (mean)': round(all.reduce((sum, turns) => sum + turns.totalMs, 0) / repeats),
  };
  rows.push(row);
  process.stdout.write(`${JSON.stringify(row)}\n`);
};
const JSON_ACCEPT = { accept: 'application/json' };
const XML_ACCEPT = { accept: 'application/xml' };
let bytes = 0;
await measure('full fetch JSON, cold', async () => (bytes = await drained(app, { url: '/eureka/apps', headers: JSON_ACCEPT })));
process.stdout.write(`  ${round(bytes / 1e6)} MB\n`);
await measure('full fetch XML, cold', () => drained(app, { url: '/eureka/apps', headers: XML_ACCEPT }));
node.registry.applyRemote(record({ service: 'svc-1', instanceId: 'changed', peerId: node.registry.peerId, wallMs: clock.nowMs() }), 60_000);
await measure('full fetch JSON, warm (one change)', () => drained(app, { url: '/eureka/apps', headers: JSON_ACCEPT }));
await measure('full fetch XML, warm (one change)', () => drained(app, { url: '/eureka/apps', headers: XML_ACCEPT }));
let registered = 0;
const registerBody = () => ({
  instance: {
    app: 'SVC-7',
    instanceId: `new-${(registered += 1)}`,
    hostName: 'new.local',
    ipAddr: '10.9.9.9',
    port: { $: 8080, '@enabled': true },
    vipAddress: 'svc-7',
    dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
    status: 'UP',
  },
});
await measure('register a new instance', () => drained(app, { method: 'POST', url: '/eureka/apps/SVC-7', headers: JSON_ACCEPT, payload: registerBody() }), REPEATS);
await measure('heartbeat of an unknown id (404)', () => drained(app, { method: 'PUT', url: '/eureka/apps/SVC-7/unknown' }), REPEATS);
// A VIP read: every served instance looked at; an app whose instances are all on the VIP is
// its full fetch part (shared, kept). The reference: the same document in one piece
// (`vipDocument` and JSON.stringify). Before 2026-12-07 the route matched in slices, then
// sorted what matched, built the document and stringified it in one piece.
await measure('GET /eureka/vips/svc-7', () => drained(app, { url: '/eureka/vips/svc-7', headers: JSON_ACCEPT }), 5);
const context = () => ({ store: node.store, namespace: 'default', view: node.registry.leaseView(), defaults: { renewalIntervalSecs: 30 } });
await measure('reference: the VIP document in one piece', async () => JSON.stringify(vipDocument(context(), 'svc-7', false)), 5);
const last = `i-${N - 1}`;
await measure(`GET /eureka/instances/${last}`, () => drained(app, { url: `/eureka/instances/${last}`, headers: JSON_ACCEPT }), REPEATS);
await measure('GET /eureka/instances/unknown (404)', () => drained(app, { url: '/eureka/instances/unknown', headers: JSON_ACCEPT }), REPEATS);

process.stdout.write(`\nN=${N} S=${S}, load average ${loadavg().map((load) => load.toFixed(1)).join(' ')} on ${availableParallelism()} cores\n${table(rows)}\n`);
await app.close();
process.exit(0);
