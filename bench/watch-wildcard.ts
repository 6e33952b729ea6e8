/**
 * A wildcard watch (`GET /v1/watch` without `services`) of a namespace of N instances (default
 * 1,000,000) over S services (default 1,000), in process: how long its snapshots hold the event
 * loop, and how long closing it does.
 *
 *   - subscribe: from `subscribeFrames` to the last service's snapshot written to the sink
 *     (which encodes each frame, as the SSE route's `frame.bytes()` does), the views cold (built
 *     more than a second before, as a reconnecting client finds them): the subscribe call itself
 *     and each later turn (a timer of the fake clock) timed with performance.now();
 *   - close: `close()` and the turns it leaves (the subscriber leaving its channels).
 *
 * The longest turn is what a heartbeat arriving meanwhile waits at most; "work" is the turns'
 * sum, "wall" adds the event loop's own turns between them (3 setImmediate per fake-clock timer).
 * Garbage collection pauses are reported apart: one that lands in a turn makes it that longer.
 *   npx tsx bench/watch-wildcard.ts [--instances=1000000] [--services=1000]
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { percentile, round, table } from './lib.js';
import { createTestNode } from '../test/support/node.js';
import { record } from '../test/support/records.js';

const arg = (name: string, fallback: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const N = arg('instances', 1_000_000);
const S = arg('services', 1_000);
const METADATA = { a: 'x', b: 'y', c: 'z', d: 'w', e: 'v' };

const { node, clock } = await createTestNode({ start: false });
for (let i = 0; i < N; i++) {
  const data = { host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, port: 1 + (i % 60_000), securePort: null, status: 'UP' as const, weight: 1, zone: i % 2 ? 'z1' : 'z2', metadata: METADATA };
  node.registry.applyRemote(record({ service: `svc-${i % S}`, instanceId: `i-${i}`, peerId: 'other', wallMs: clock.nowMs(), data, leaseDurationMs: 30_000 }), 30_000);
}
// The views a reconnecting client finds: built more than their 1 s max age ago.
await clock.advance(1_100);

// Garbage collection pauses (the heap of a million records makes the major ones long): a turn
// that a pause lands in is that much longer, whichever code allocated what is collected.
const gcMs: number[] = [];
const gcObserver = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs.push(entry.duration);
});
gcObserver.observe({ entryTypes: ['gc'] });

// Each turn after the first is a timer of the fake clock: timed as it runs, in wall time and in
// the process's CPU time (on a shared machine, wall time also counts the time other processes had
// the core).
const turnsMs: number[] = [];
const turnsCpuMs: number[] = [];
const timed = (work: () => void): number => {
  const startedMs = performance.now();
  const startedCpu = process.cpuUsage();
  work();
  const cpu = process.cpuUsage(startedCpu);
  turnsCpuMs.push((cpu.user + cpu.system) / 1_000);
  return performance.now() - startedMs;
};
const schedule = clock.setTimeout.bind(clock);
clock.setTimeout = (fn, delayMs) => schedule(() => turnsMs.push(timed(fn)), delayMs);
/**
 * Runs the turns until `finished` holds (or no timer is left), each a millisecond of the fake
 * clock (Node runs a zero-delay timer a millisecond later at the soonest; the views' sweep of
 * the encodings older than a second runs as it would); the wall time from `startedMs`, once the
 * garbage collector's entries of the time are in.
 */
async function turnsUntil(finished: () => boolean, startedMs: number): Promise<number> {
  while (!finished() && clock.pendingTimers > 0) await clock.advance(1);
  const wallMs = performance.now() - startedMs;
  // The observer's entries come in a later task.
  await new Promise((resolve) => setTimeout(resolve, 20));
  return wallMs;
}
const row = (phase: string, wallMs: number) => ({
  phase,
  turns: turnsMs.length,
  'median turn ms': round(percentile(turnsMs, 0.5), 1),
  'longest turn ms': round(Math.max(...turnsMs), 1),
  'p99 turn ms': round(percentile(turnsMs, 0.99), 1),
  'work ms': round(turnsMs.reduce((sum, ms) => sum + ms, 0), 0),
  'wall ms': round(wallMs, 0),
  'longest turn cpu ms': round(Math.max(...turnsCpuMs), 1),
  'p99 turn cpu ms': round(percentile(turnsCpuMs, 0.99), 1),
  'longest gc pause ms': round(Math.max(0, ...gcMs), 1),
  'gc ms': round(gcMs.reduce((sum, ms) => sum + ms, 0), 0),
});
// The old hub has no `openChannels` (it left every channel in the close call).
const openChannels = () => (node.watch as unknown as { openChannels?: number }).openChannels ?? 0;

let frames = 0;
let bytes = 0;
gcMs.length = 0;
const startedMs = performance.now();
let subscription: { close(): void } | undefined;
turnsMs.push(
  timed(() => {
    subscription = node.watch.subscribeFrames({ namespace: 'default', services: null }, (frame) => {
      frames += 1;
      bytes += frame.bytes().length;
      return true;
    });
  }),
);
const subscribeWallMs = await turnsUntil(() => frames >= S, startedMs);
if (frames !== S) throw new Error(`${frames} snapshots for ${S} services`);
const rows = [row('subscribe: every snapshot', subscribeWallMs)];
const channels = openChannels();

turnsMs.length = 0;
turnsCpuMs.length = 0;
gcMs.length = 0;
const closeStartedMs = performance.now();
turnsMs.push(timed(() => subscription!.close()));
const closeWallMs = await turnsUntil(() => openChannels() === 0, closeStartedMs);
rows.push(row('close: leave every channel', closeWallMs));

console.log(`N=${N} instances, S=${S} services, ${frames} snapshots, ${round(bytes / 1e6, 1)} MB; channels held before close: ${channels || 'n/a'}`);
console.log(table(rows));
await node.stop();
process.exit(0);
