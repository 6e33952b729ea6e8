/**
 * What counting costs on the hot paths (issue 37): heartbeat and discover on a peer built from
 * this tree against the same peer built from a base commit, and the bare fastify reference,
 * in one run, with single-peer.ts's load (same seeding, 32 in flight, closed loop). Rounds
 * rotate the three servers so that the machine's load drift hurts them alike; a ratio is the
 * median over rounds of two servers' rates in the same round.
 *
 *   npm run build && (build the base commit's dist somewhere: tsc -p tsconfig.build.json)
 *   tsx bench/metrics-overhead.ts --before /tmp/base/dist/main.js [--rounds 10]
 *
 * Bounded: rounds x 1 s x 3 servers x 2 routes, plus warm-ups and seeding (about 90 s at 10).
 */
import type { Pool } from 'undici';
import { pool, progress, round } from './lib.js';
import { pinLoadGenerator, pinningAvailable, startPeer, startReference, type ServerProcess } from './processes.js';
import { burst, figures, median, seed, type RouteName } from './single-peer.js';

const CONCURRENCY = 32;

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

const before = argument('--before');
if (!before) throw new Error('usage: tsx bench/metrics-overhead.ts --before PATH/dist/main.js [--rounds N]');
const rounds = Math.min(30, Math.max(3, Number(argument('--rounds') ?? 10)));
const pinned = pinningAvailable();
progress(`metrics overhead: ${rounds} round(s) of 1 s per route and server, ${CONCURRENCY} in flight, pinning ${pinned ? 'on' : 'off'}`);
const servers: ServerProcess[] = [];
const pools: Pool[] = [];
try {
  const after = await startPeer('after', { pinned });
  const base = await startPeer('before', { pinned, main: before });
  const reference = await startReference('reference', { pinned });
  servers.push(after, base, reference);
  const targets: Record<string, Pool> = { after: pool(after.url, CONCURRENCY), before: pool(base.url, CONCURRENCY), reference: pool(reference.url, CONCURRENCY) };
  pools.push(...Object.values(targets));
  for (const target of Object.values(targets)) await seed(target);
  if (pinned) pinLoadGenerator(true);
  const names = Object.keys(targets);
  const summary: Record<string, unknown> = {};
  for (const route of ['heartbeat', 'discover'] as RouteName[]) {
    const runs = new Map(names.map((name) => [name, [] as Awaited<ReturnType<typeof burst>>[]]));
    for (const name of names) await burst(targets[name]!, route, 1, `warm-${name}`);
    for (let r = 0; r < rounds; r++) {
      const order = names.map((_, i) => names[(i + r) % names.length]!);
      for (const name of order) runs.get(name)!.push(await burst(targets[name]!, route, 1, `${name}-${r}`));
    }
    const rate = (run: Awaited<ReturnType<typeof burst>>) => run.done / run.elapsedMs;
    const ratio = (a: string, b: string) => round(median(runs.get(a)!.map((run, i) => rate(run) / rate(runs.get(b)![i]!))), 3);
    const figuresOf = Object.fromEntries(names.map((name) => [name, figures(runs.get(name)!)]));
    summary[route] = { ...figuresOf, afterOverBefore: ratio('after', 'before'), afterOverBare: ratio('after', 'reference'), beforeOverBare: ratio('before', 'reference') };
    const f = (name: string) => `${figuresOf[name]!.opsPerSecond}/s (p50 ${figuresOf[name]!.p50Ms} ms, p99 ${figuresOf[name]!.p99Ms} ms)`;
    progress(
      `${route}: after ${f('after')}, before ${f('before')}, bare ${f('reference')}; ` +
        `after/before ${ratio('after', 'before')}, after/bare ${ratio('after', 'reference')}, before/bare ${ratio('before', 'reference')}`,
    );
  }
  console.log(JSON.stringify(summary, null, 2));
} finally {
  if (pinned) pinLoadGenerator(false);
  for (const target of pools) await target.close();
  for (const server of servers) await server.stop();
}
