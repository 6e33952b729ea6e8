/**
 * Heartbeats to one peer holding N instances (default 1,000,000): about what each of five peers
 * takes when a million instances heartbeat every 30 s. One peer from dist/ (with `--trace-gc`
 * when run as below: bench/processes.ts reads the peers' Node flags from
 * `BENCH_PEER_NODE_FLAGS`), N instances registered as bench/loop-stalls.ts does
 * (services of 1,000, five metadata keys), then `--rate` heartbeats a second (default 8,000)
 * for `--seconds` (default 40), at most 256 in flight: their p50 / p99 / max, and the peer's
 * GC pauses from its trace (Mark-Compact and Scavenge: count, p50, p99, max). 127.0.0.1 only;
 * bounded in count and time.
 *   npm run build && BENCH_PEER_NODE_FLAGS="--max-semi-space-size=8 --heap-growing-percent=20 --trace-gc" npx tsx bench/heartbeats-one-peer.ts [--instances=1000000] [--rate=8000] [--seconds=40]
 */
import { readFileSync } from 'node:fs';
import { percentile, pool, round, runAtRate } from './lib.js';
import { startPeer } from './processes.js';
import { registerMany } from './read-scale.js';

const option = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const N = option('instances', 1_000_000);
const RATE = option('rate', 8_000);
const SECONDS = option('seconds', 40);
const PER_SERVICE = 1_000;
const most = (values: number[]) => values.reduce((a, b) => Math.max(a, b), 0);

const peer = await startPeer('heartbeats-one-peer', { pinned: false, logLevel: 'warn' });
try {
  const services = Math.max(1, Math.ceil(N / PER_SERVICE));
  for (let from = 0; from < services; from += 100) {
    await registerMany(peer.url, Array.from({ length: Math.min(100, services - from) }, (_, i) => `loop-${from + i}`), PER_SERVICE, 'i');
  }
  console.log(`registered ${services * PER_SERVICE}, RSS ${round(peer.rssMb(), 1)} MB`);
  const traceBefore = readFileSync(peer.logFile, 'utf8').length;
  const target = pool(peer.url, 64);
  const times: number[] = [];
  const run = await runAtRate(RATE, SECONDS * 1_000, 256, async (i) => {
    const path = `/v1/services/loop-${i % services}/instances/i-${String(Math.floor(i / services) % PER_SERVICE).padStart(4, '0')}/heartbeat`;
    const startedMs = performance.now();
    const answer = await target.request({ method: 'PUT', path });
    await answer.body.dump();
    if (answer.statusCode !== 200) throw new Error(`heartbeat answered ${answer.statusCode}`);
    times.push(performance.now() - startedMs);
  });
  await target.close();
  console.log(`heartbeats: ${run.sent} sent, ${run.errors} failed, ${run.skipped} skipped; p50 ${round(percentile(times, 0.5), 1)}, p99 ${round(percentile(times, 0.99), 1)}, max ${round(most(times), 1)} ms`);
  const trace = readFileSync(peer.logFile, 'utf8');
  for (const [label, text] of [['registering', trace.slice(0, traceBefore)], ['heartbeats', trace.slice(traceBefore)]] as const) {
    const pauses = [...text.matchAll(/(Mark-Compact|Scavenge)[^\n]*?, ([0-9.]+) \/ ([0-9.]+) ms/g)].map((m) => ({ kind: m[1]!, ms: Number(m[2]) }));
    for (const kind of ['Mark-Compact', 'Scavenge']) {
      const ms = pauses.filter((p) => p.kind === kind).map((p) => p.ms);
      console.log(`GC while ${label}, ${kind}: ${ms.length}, p50 ${percentile(ms, 0.5)}, p99 ${percentile(ms, 0.99)}, max ${most(ms)} ms`);
    }
  }
} finally {
  await peer.stop();
}
