/**
 * Throughput and latency of register, heartbeat and discover on one registry peer, against
 * the bare fastify reference (bench/reference-server.ts) in the same run, with the same load
 * generator settings. Servers are pinned to one CPU and the load generator to the others
 * when taskset is there. Short rounds alternate the order of the two servers; the ratio is the
 * median over the rounds of the two servers' rates in the same round, so that a noisy
 * neighbour's burst skews a few rounds, not the figure. Rates and latencies pool every round.
 * Register and heartbeat are measured again at 16 and at 64 in flight (issue 36's targets).
 *
 * Part of `npm run bench`; on its own (after `npm run build`): `npx tsx bench/single-peer.ts [--quick]`,
 * figures in bench/out/single-peer.json.
 */
import type { Pool } from 'undici';
import { percentile, pool, progress, quick, round, runBounded, send, writeResult } from './lib.js';
import { pinLoadGenerator, pinningAvailable, startPeer, startReference, type ServerProcess } from './processes.js';

export type RouteName = 'register' | 'heartbeat' | 'discover';

export interface RouteFigures {
  opsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  ops: number;
  errors: number;
}

export interface SinglePeerResult {
  pinned: boolean;
  concurrency: number;
  roundSeconds: number;
  rounds: number;
  discoverInstances: number;
  /**
   * `ratio`: the median over the rounds of the peer's rate over the bare server's in the same
   * round (robust to a burst of the neighbours' load hitting a few rounds); `pairRatios` each.
   */
  routes: Record<RouteName, RoutePair>;
  /**
   * Register and heartbeat again at 16 and at 64 in flight, against issue 36's targets (register
   * >= 0.8x, heartbeat >= 0.9x the bare route answering the same size); absent in older results.
   */
  writes?: (RoutePair & { route: WriteRoute; inFlight: number })[];
}

export interface RoutePair {
  peer: RouteFigures;
  reference: RouteFigures;
  ratio: number;
  pairRatios: number[];
  target: number;
}

export type WriteRoute = 'register' | 'heartbeat';

export const SINGLE_PEER_TARGETS: Record<RouteName, number> = { register: 0.5, heartbeat: 0.7, discover: 0.8 };
/** Issue 36's targets for the writes, at 16 and at 64 in flight. */
export const WRITE_TARGETS: Record<WriteRoute, number> = { register: 0.8, heartbeat: 0.9 };
const WRITE_IN_FLIGHT = [16, 64] as const;

const CONCURRENCY = 32;
/** Bounds a burst in count as well as in time. */
const MAX_OPS_PER_BURST = 1_000_000;
const HEARTBEAT_INSTANCES = 1_000;
const DISCOVER_INSTANCES = 20;
const metadata = { team: 'bench', version: '1.4.2', zone: 'a', build: '7f3c2e1', owner: 'payments' };

/** The calls of each route, the same for both servers. */
function routeCall(route: RouteName, i: number, prefix: string) {
  if (route === 'register') {
    return {
      method: 'POST' as const,
      path: '/v1/instances',
      body: { service: `reg-${i % 50}`, instanceId: `${prefix}-${i}`, host: '10.0.0.1', port: 1 + (i % 60_000), leaseDurationMs: 600_000, metadata },
    };
  }
  if (route === 'heartbeat') {
    return { method: 'PUT' as const, path: `/v1/services/hb/instances/hb-${i % HEARTBEAT_INSTANCES}/heartbeat` };
  }
  return { method: 'GET' as const, path: '/v1/services/disco' };
}

export async function seed(target: Pool): Promise<void> {
  const bodies = [
    ...Array.from({ length: HEARTBEAT_INSTANCES }, (_, i) => ({ service: 'hb', instanceId: `hb-${i}`, host: '10.0.0.2', port: 1 + i, leaseDurationMs: 600_000, metadata })),
    ...Array.from({ length: DISCOVER_INSTANCES }, (_, i) => ({ service: 'disco', instanceId: `d-${i}`, host: '10.0.0.3', port: 1 + i, leaseDurationMs: 600_000, metadata })),
  ];
  const result = await runBounded(bodies.length, 16, 60_000, async (i) => {
    const answer = await send(target, { method: 'POST', path: '/v1/instances', body: bodies[i] });
    if (answer.status >= 300) throw new Error(`seed register answered ${answer.status}`);
  });
  if (result.errors > 0 || result.done < bodies.length) throw new Error('could not seed the server');
}

/** One timed closed-loop burst of one route against one server. */
export async function burst(target: Pool, route: RouteName, seconds: number, prefix: string, inFlight = CONCURRENCY) {
  return runBounded(MAX_OPS_PER_BURST, inFlight, seconds * 1_000, async (i) => {
    const answer = await send(target, routeCall(route, i, prefix));
    if (answer.status >= 300) throw new Error(`${route} answered ${answer.status}`);
  });
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function figures(runs: { latenciesMs: number[]; elapsedMs: number; errors: number }[]): RouteFigures {
  const latencies = runs.flatMap((run) => run.latenciesMs);
  const elapsedMs = runs.reduce((sum, run) => sum + run.elapsedMs, 0);
  return {
    opsPerSecond: round(latencies.length / (elapsedMs / 1_000), 0),
    p50Ms: round(percentile(latencies, 0.5), 2),
    p99Ms: round(percentile(latencies, 0.99), 2),
    ops: latencies.length,
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
  };
}

export async function benchSinglePeer(options: { quick: boolean }): Promise<SinglePeerResult> {
  const pinned = pinningAvailable();
  // Many short paired rounds rather than a few long ones: the neighbours' load comes in
  // bursts, and the two halves of a pair, a second apart, mostly see the same burst.
  const rounds = options.quick ? 3 : 10;
  const roundSeconds = options.quick ? 0.75 : 1;
  const warmUpSeconds = options.quick ? 0.5 : 1;
  const writeRounds = options.quick ? 2 : 8;
  progress(`single peer vs bare fastify: ${rounds} round(s) of ${roundSeconds} s per route and server, ${CONCURRENCY} in flight, pinning ${pinned ? 'on (servers on CPU 0, load elsewhere)' : 'off'}`);
  const servers: ServerProcess[] = [];
  const pools: Pool[] = [];
  try {
    const peer = await startPeer('single-peer', { pinned });
    const reference = await startReference('reference', { pinned });
    servers.push(peer, reference);
    const targets = { peer: pool(peer.url, CONCURRENCY), reference: pool(reference.url, CONCURRENCY) };
    pools.push(...Object.values(targets));
    for (const target of Object.values(targets)) await seed(target);
    if (pinned) pinLoadGenerator(true);
    const routes = {} as SinglePeerResult['routes'];
    for (const route of ['register', 'heartbeat', 'discover'] as RouteName[]) {
      routes[route] = await pairedRounds(targets, route, { rounds, roundSeconds, warmUpSeconds, inFlight: CONCURRENCY, target: SINGLE_PEER_TARGETS[route] });
    }
    const writes: NonNullable<SinglePeerResult['writes']> = [];
    for (const inFlight of WRITE_IN_FLIGHT) {
      const wide = { peer: pool(peer.url, inFlight), reference: pool(reference.url, inFlight) };
      pools.push(...Object.values(wide));
      for (const route of ['register', 'heartbeat'] as WriteRoute[]) {
        const pair = await pairedRounds(wide, route, { rounds: writeRounds, roundSeconds, warmUpSeconds, inFlight, target: WRITE_TARGETS[route] });
        writes.push({ route, inFlight, ...pair });
      }
    }
    return { pinned, concurrency: CONCURRENCY, roundSeconds, rounds, discoverInstances: DISCOVER_INSTANCES, routes, writes };
  } finally {
    if (pinned) pinLoadGenerator(false);
    for (const target of pools) await target.close();
    for (const server of servers) await server.stop();
  }
}

/**
 * Paired rounds of one route: a warm-up of each server, then `rounds` rounds in which each
 * server runs a burst, rotating who goes first; the ratio is the median of the rounds' ratios.
 */
async function pairedRounds(
  targets: { peer: Pool; reference: Pool },
  route: RouteName,
  options: { rounds: number; roundSeconds: number; warmUpSeconds: number; inFlight: number; target: number },
): Promise<RoutePair> {
  const names = ['peer', 'reference'] as const;
  const runs = { peer: [] as Awaited<ReturnType<typeof burst>>[], reference: [] as Awaited<ReturnType<typeof burst>>[] };
  const tag = `${route}-${options.inFlight}`;
  // Warm up every server (JIT, connections), untimed.
  for (const name of names) await burst(targets[name], route, options.warmUpSeconds, `warm-${tag}-${name}`, options.inFlight);
  for (let r = 0; r < options.rounds; r++) {
    // Rotate who goes first, so that drift in the machine's load hurts every server alike.
    const order = names.map((_, i) => names[(i + r) % names.length]!);
    for (const name of order) runs[name].push(await burst(targets[name], route, options.roundSeconds, `${tag}-${name}-${r}`, options.inFlight));
  }
  const rate = (run: Awaited<ReturnType<typeof burst>>) => run.done / run.elapsedMs;
  const pairRatios = runs.peer.map((run, r) => rate(run) / rate(runs.reference[r]!));
  const pair = { peer: figures(runs.peer), reference: figures(runs.reference), ratio: round(median(pairRatios), 2), pairRatios: pairRatios.map((value) => round(value, 2)), target: options.target };
  progress(
    `${route}, ${options.inFlight} in flight: peer ${pair.peer.opsPerSecond}/s (p50 ${pair.peer.p50Ms} ms, p99 ${pair.peer.p99Ms} ms), bare ${pair.reference.opsPerSecond}/s (p50 ${pair.reference.p50Ms} ms, p99 ${pair.reference.p99Ms} ms): ratio ${pair.ratio} (target >= ${options.target})`,
  );
  return pair;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  progress(`written to ${writeResult('single-peer', await benchSinglePeer({ quick }))}`);
}
