/**
 * Old-generation garbage per write, in this process, of two things issue 36 changed: a
 * replication outbox filled and drained at a batch size, against the outbox before (a Map of
 * key strings to entry objects) in the same run; and a long-lived Map cleared on every write,
 * as the Eureka shared documents were, against clearing it only when it holds something. Objects that die
 * young cost a scavenge; what reaches the old space stays until a full collection, and what V8
 * grew the old space for is what a peer's RSS keeps. A long-lived Map's table is reallocated in
 * the old generation whenever it grows or shrinks. Each figure is the old space's growth over
 * the run, the process's live objects unchanged, so it is garbage; a run with a full
 * collection inside says so (its figure is then a lower bound: give V8 room with
 * `--initial-old-space-size=4000` to avoid them).
 *   node --expose-gc --max-semi-space-size=8 [--initial-old-space-size=4000] --import tsx bench/old-space-garbage.ts [--writes=1000000]
 */
import v8 from 'node:v8';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { Outbox } from '../src/replication/outbox.js';

const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) throw new Error('run with node --expose-gc');
const writes = Number(process.argv.find((arg) => arg.startsWith('--writes='))?.slice(9) ?? 1_000_000);
const oldSpaceBytes = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')!.space_used_size;

let fullCollections = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) fullCollections += 1;
  }
}).observe({ entryTypes: ['gc'] });

/** Runs `work` (after a warm-up round) and prints the old space's growth per write. */
async function measure(name: string, work: (count: number) => void): Promise<void> {
  work(Math.min(writes, 20_000));
  collect!();
  collect!();
  await new Promise((resolve) => setTimeout(resolve, 100));
  const before = oldSpaceBytes();
  const fullBefore = fullCollections;
  work(writes);
  const grown = oldSpaceBytes() - before;
  await new Promise((resolve) => setTimeout(resolve, 100));
  const full = fullCollections - fullBefore;
  console.log(`${name}: old space +${(grown / writes).toFixed(1)} B per write (${writes.toLocaleString('en')} writes${full > 0 ? `; ${full} full collections inside: a lower bound` : ''})`);
}

const items = Array.from({ length: 100_000 }, (_, i) => ({ i }));
for (const batch of [120, 500]) {
  const outbox = new Outbox<{ i: number }>(100_000);
  await measure(`outbox, a batch taken every ${batch} writes`, (count) => {
    for (let i = 0; i < count; i++) {
      outbox.add(items[i % items.length]!, 1_000 + i);
      if (outbox.size >= batch) outbox.take(500, () => true);
    }
  });
}

/** The outbox before issue 36's change, for reference: a Map from key string to an entry object, in arrival order. */
const previous = new Map<string, { key: { i: number }; queuedAtMs: number }>();
await measure('reference: a Map of key strings to entry objects (the outbox before), a batch every 120 writes', (count) => {
  for (let i = 0; i < count; i++) {
    const key = items[i % items.length]!;
    const keyString = `default/orders/instance-${key.i}`;
    previous.delete(keyString);
    previous.set(keyString, { key, queuedAtMs: Date.now() });
    if (previous.size >= 120) {
      let taken = 0;
      for (const queued of previous.keys()) {
        if (taken++ >= 500) break;
        previous.delete(queued);
      }
    }
  }
});

/** A long-lived (old-generation) map, empty, cleared on every write: each clear gives it a new table. */
const documents = new Map<string, string>();
await measure('a long-lived empty Map cleared on every write (the Eureka shared documents before)', (count) => {
  for (let i = 0; i < count; i++) documents.clear();
});
await measure('the same cleared only when it holds something', (count) => {
  for (let i = 0; i < count; i++) if (documents.size > 0) documents.clear();
});
