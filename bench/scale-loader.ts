/**
 * One load-generator process of the scale benchmark (bench/scale.ts starts several, each pinned
 * to its own cores, since one Node process cannot load a peer that runs on two cores). It
 * registers or heartbeats the instances `from` to `to` (instance i on peer `urls[i % urls.length]`)
 * and prints one JSON line of figures. Every loop is bounded in count and time; 127.0.0.1 only.
 *   node --import tsx bench/scale-loader.ts '<LoaderTask as JSON>'
 */
import { pathToFileURL } from 'node:url';
import { percentile, pool, round, runAtRate, runBounded, send } from './lib.js';

export interface LoaderTask {
  mode: 'register' | 'heartbeat';
  urls: string[];
  from: number;
  to: number;
  services: number;
  inFlight: number;
  /** Stop after this long whatever is left. */
  maxMs: number;
  /** Register: time the first `coldCount` registrations apart (a cold peer's rate). */
  coldCount?: number;
  /** Heartbeat: the rate (per second) and how long. */
  ratePerSecond?: number;
  durationMs?: number;
}

export interface LoaderFigures {
  done: number;
  errors: number;
  elapsedMs: number;
  coldMs: number | null;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  skipped: number;
}

/** The register body of instance `i`, five metadata keys (bench/memory.ts and heap-slope.ts register the same). */
export function scaleBody(i: number, services: number, prefix = 'scale'): Record<string, unknown> {
  return {
    service: `${prefix}-${i % services}`,
    instanceId: `i-${i}`,
    host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    port: 1 + (i % 60_000),
    leaseDurationMs: 600_000,
    metadata: { version: '1.4.2', zone: `z${i % 3}`, team: 'payments', build: `b${i % 977}`, commit: '7f3c2e1a' },
  };
}

async function run(task: LoaderTask): Promise<LoaderFigures> {
  const pools = task.urls.map((url) => pool(url, task.inFlight));
  const latenciesMs: number[] = [];
  const count = task.to - task.from;
  try {
    if (task.mode === 'register') {
      let coldMs: number | null = null;
      const startedMs = performance.now();
      let finished = 0;
      const run = await runBounded(count, task.inFlight, task.maxMs, async (n) => {
        const i = task.from + n;
        const answer = await send(pools[i % pools.length]!, { method: 'POST', path: '/v1/instances', body: scaleBody(i, task.services) });
        if (answer.status !== 201 && answer.status !== 200) throw new Error(`register answered ${answer.status}`);
        finished += 1;
        if (finished === task.coldCount) coldMs = performance.now() - startedMs;
      });
      return { done: run.done, errors: run.errors, elapsedMs: round(run.elapsedMs), coldMs: coldMs === null ? null : round(coldMs), ...spread(run.latenciesMs), skipped: 0 };
    }
    const startedMs = performance.now();
    const beats = await runAtRate(task.ratePerSecond ?? 1, Math.min(task.durationMs ?? 0, task.maxMs), task.inFlight, async (n) => {
      const i = task.from + (n % count);
      const sentMs = performance.now();
      const answer = await send(pools[i % pools.length]!, { method: 'PUT', path: `/v1/services/scale-${i % task.services}/instances/i-${i}/heartbeat` });
      latenciesMs.push(performance.now() - sentMs);
      if (answer.status !== 200) throw new Error(`heartbeat answered ${answer.status}`);
    });
    return { done: beats.sent - beats.errors, errors: beats.errors, elapsedMs: round(performance.now() - startedMs), coldMs: null, ...spread(latenciesMs), skipped: beats.skipped };
  } finally {
    await Promise.all(pools.map((target) => target.close()));
  }
}

function spread(latenciesMs: number[]): { p50Ms: number; p99Ms: number; maxMs: number } {
  let maxMs = 0;
  for (const value of latenciesMs) if (value > maxMs) maxMs = value;
  return { p50Ms: round(percentile(latenciesMs, 0.5), 2), p99Ms: round(percentile(latenciesMs, 0.99), 2), maxMs: round(maxMs, 1) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const figures = await run(JSON.parse(process.argv[2] ?? '{}') as LoaderTask);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  process.exit(0);
}
