/**
 * How long a segment roll holds the event loop: the figure behind the fix of the blocking
 * fsyncs in src/persistence/segment-log.ts (docs/durability.md, "Snapshots and the log behind
 * them"). Runs in one process on the real file system:
 *
 *   nice -n 19 npx tsx bench/segment-roll.ts [--rolls 20] [--records 2000] [--no-disk-load] [--dir /path]
 *
 * A timer keeps the event loop busy (0.2 ms of work every millisecond, as requests would), and
 * `perf_hooks.monitorEventLoopDelay` records how late it runs. Each round appends `--records`
 * records (~425 bytes each, sync policy `never`, so the roll has them all to fsync) and then
 * rolls, alternating two disks: `async`, the code as it is (nodeDisk: every fsync, create and
 * close of a roll on libuv's thread pool), and `blocking`, the reference: the same SegmentLog
 * over a disk whose roll steps are the blocking calls the roll made before (fdatasyncSync of
 * the old segment, openSync + writeSync + fdatasyncSync of the new one, fsyncSync of the
 * directory, closeSync). Alternating keeps both under the same disk conditions.
 *
 * Unless `--no-disk-load`, a child process (nice 19) keeps the disk busy meanwhile, writing 4 MiB
 * and fdatasyncing it in a loop into the same directory (bounded: 60 s at most, its file is cut
 * back every 64 MiB), as the other peers' data dirs on a shared disk do in the chaos runs.
 * Prints, per mode, the longest time one roll step (a call to the disk) took before returning,
 * which is how long it held the event loop; the longest event-loop delay seen during the rolls
 * and its p99 (these also count the time the process waited for a CPU, large on a loaded
 * machine); and how long the rolls took. Writes bench/out/segment-roll.json.
 */
import { spawn } from 'node:child_process';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { nodeDisk, type Disk } from '../src/persistence/disk.js';
import { SegmentLog } from '../src/persistence/segment-log.js';
import { formatVersion } from '../src/clock/hlc.js';
import { percentile, progress, round, sleep, table, writeResult } from './lib.js';

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}
const ROLLS = arg('rolls', 20);
const RECORDS = arg('records', 2_000);
const diskLoad = !process.argv.includes('--no-disk-load');
const dirAt = process.argv.indexOf('--dir');
const parent = dirAt >= 0 ? process.argv[dirAt + 1]! : tmpdir();

/** The roll steps as they were before: every one blocking the event loop. */
const blockingDisk: Disk = {
  ...nodeDisk,
  sync: (fd) => Promise.resolve(fs.fdatasyncSync(fd)),
  createDurably(path, firstBytes) {
    const fd = fs.openSync(path, 'wx');
    fs.writeSync(fd, firstBytes);
    fs.fdatasyncSync(fd);
    const dirFd = fs.openSync(dirname(path), 'r');
    fs.fsyncSync(dirFd);
    fs.closeSync(dirFd);
    return Promise.resolve(fd);
  },
  closeFile: (fd) => Promise.resolve(fs.closeSync(fd)),
  syncDirectory(dir) {
    const fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    return Promise.resolve();
  },
};

/** The longest time one call of a roll step took before it returned: the time it held the event loop. */
const heldMs = { async: 0, blocking: 0 };
function timed(disk: Disk, mode: keyof typeof heldMs): Disk {
  const steps = ['sync', 'createDurably', 'closeFile', 'syncDirectory'] as const;
  const wrapped: Disk = { ...disk };
  for (const step of steps) {
    const original = disk[step] as (...args: unknown[]) => Promise<unknown>;
    (wrapped as unknown as Record<string, unknown>)[step] = (...args: unknown[]) => {
      const startedAt = performance.now();
      try {
        return original(...args);
      } finally {
        heldMs[mode] = Math.max(heldMs[mode], performance.now() - startedAt);
      }
    };
  }
  return wrapped;
}

const metadata = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`key${i}`, 'v'.repeat(40)]));
function record(i: number) {
  return {
    namespace: 'default',
    service: 'orders',
    instanceId: `i-${i}`,
    data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata },
    version: formatVersion({ wallMs: 1_000 + i, counter: 0, peerId: 'bench' }),
    owner: 'bench',
    deleted: null,
    leaseDurationMs: 30_000,
    registeredAtMs: 1_000,
  };
}

/** A child that keeps the disk busy: 4 MiB written and fdatasynced in a loop, for 60 s at most. */
function startDiskLoad(dir: string) {
  const code = `
    const fs = require('node:fs');
    const file = ${JSON.stringify(join(dir, 'disk-load.bin'))};
    const fd = fs.openSync(file, 'w');
    const chunk = Buffer.alloc(4 << 20, 7);
    const until = Date.now() + 60_000;
    let size = 0;
    while (Date.now() < until) {
      fs.writeSync(fd, chunk); size += chunk.length; fs.fdatasyncSync(fd);
      if (size >= 64 << 20) { fs.ftruncateSync(fd, 0); size = 0; }
    }`;
  return spawn('nice', ['-n', '19', process.execPath, '-e', code], { stdio: 'ignore' });
}

/** Keeps the event loop busy as requests would: 0.2 ms of work every millisecond. */
function loadEventLoop(): () => void {
  const timer = setInterval(() => {
    const until = performance.now() + 0.2;
    while (performance.now() < until);
  }, 1);
  return () => clearInterval(timer);
}

interface ModeResult {
  maxDelayMs: number;
  p99DelayMs: number;
  rollMs: number[];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(parent, 'segment-roll-'));
  const load = diskLoad ? startDiskLoad(dir) : null;
  const stopLoop = loadEventLoop();
  const results: Record<'async' | 'blocking', ModeResult> = {
    async: { maxDelayMs: 0, p99DelayMs: 0, rollMs: [] },
    blocking: { maxDelayMs: 0, p99DelayMs: 0, rollMs: [] },
  };
  const histograms = { async: monitorEventLoopDelay({ resolution: 1 }), blocking: monitorEventLoopDelay({ resolution: 1 }) };
  try {
    if (load) await sleep(1_000); // let the writer get going
    const logs = {
      async: new SegmentLog(timed(nodeDisk, 'async'), { dir: join(dir, 'async'), peerId: 'bench', syncPolicy: 'never', nowMs: Date.now, onFailure: (e) => console.error(e) }),
      blocking: new SegmentLog(timed(blockingDisk, 'blocking'), { dir: join(dir, 'blocking'), peerId: 'bench', syncPolicy: 'never', nowMs: Date.now, onFailure: (e) => console.error(e) }),
    };
    for (const mode of ['async', 'blocking'] as const) {
      nodeDisk.makeDir(join(dir, mode));
      await logs[mode].open(1);
      heldMs[mode] = 0;
    }
    const seqs = { async: 1, blocking: 1 };
    let next = 0;
    for (let round_ = 0; round_ < ROLLS; round_++) {
      for (const mode of round_ % 2 === 0 ? (['async', 'blocking'] as const) : (['blocking', 'async'] as const)) {
        const log = logs[mode];
        const mark = log.mark();
        for (let i = 0; i < RECORDS; i++) log.append(record(next++));
        await log.barrier(mark);
        await sleep(20);
        const histogram = histograms[mode];
        histogram.enable();
        const startedAt = performance.now();
        await log.roll(++seqs[mode]);
        results[mode].rollMs.push(performance.now() - startedAt);
        await sleep(5); // a late tick after the roll is still its doing
        histogram.disable();
      }
    }
    for (const mode of ['async', 'blocking'] as const) {
      await logs[mode].close();
      const histogram = histograms[mode];
      results[mode].maxDelayMs = histogram.max / 1e6;
      results[mode].p99DelayMs = histogram.percentile(99) / 1e6;
    }
  } finally {
    stopLoop();
    load?.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  const rows = (['async', 'blocking'] as const).map((mode) => ({
    mode,
    'longest roll step on the event loop (ms)': round(heldMs[mode], 2),
    'longest event-loop delay (ms)': round(results[mode].maxDelayMs, 1),
    'p99 delay (ms)': round(results[mode].p99DelayMs, 1),
    'roll median (ms)': round(percentile(results[mode].rollMs, 0.5), 1),
    'roll max (ms)': round(Math.max(...results[mode].rollMs), 1),
  }));
  console.log(table(rows));
  progress(
    `${ROLLS} rolls each of ${RECORDS} records, disk load ${diskLoad ? 'on' : 'off'}: the longest roll step held the event loop ` +
      `${round(heldMs.async, 2)} ms (async) vs ${round(heldMs.blocking, 2)} ms (blocking reference); longest event-loop delay ` +
      `${round(results.async.maxDelayMs, 1)} vs ${round(results.blocking.maxDelayMs, 1)} ms (includes waiting for a CPU on a loaded machine)`,
  );
  const file = writeResult('segment-roll', { rolls: ROLLS, records: RECORDS, diskLoad, heldMs, results });
  progress(`written ${file}`);
}

await main();
