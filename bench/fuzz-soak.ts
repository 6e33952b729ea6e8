/**
 * Fuzz soak: the property of test/unit/http/fuzz.test.ts (never a 5xx, never a crash, a
 * refused request changes nothing) over many more cases, in dev mode and with every guard on.
 * In process (app.inject on a fake clock): no socket, no network.
 *
 *   npx tsx bench/fuzz-soak.ts [cases per mode, default 100000] [seed]
 *
 * Bounded: the given number of cases per mode; prints the seed so a failure can be replayed.
 */
import { fuzzRoutes, fuzzTarget } from '../test/support/fuzz.js';
import { progress, round } from './lib.js';

const runs = Number(process.argv[2] ?? 100_000);
const seed = Number(process.argv[3] ?? Date.now() % 2 ** 31);

async function main(): Promise<void> {
  progress(`fuzz soak: ${runs} cases per mode, seed ${seed}`);
  for (const secured of [false, true]) {
    const target = await fuzzTarget(secured);
    const startedMs = performance.now();
    const { statuses } = await fuzzRoutes(target, runs, seed);
    const seconds = (performance.now() - startedMs) / 1_000;
    const summary = [...statuses].sort(([a], [b]) => a - b).map(([status, count]) => `${status}: ${count}`).join(', ');
    progress(`${secured ? 'secured' : 'dev mode'}: ${runs} cases in ${round(seconds)} s (${round(runs / seconds, 0)}/s); ${summary}`);
    await target.app.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`fuzz soak failed (seed ${seed}): ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
