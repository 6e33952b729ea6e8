/**
 * The lease reaper at scale (issue 16: no work may hold the event loop long enough to delay a
 * heartbeat). In-process, for 100,000 and 500,000 instances (100 or 500 services of 1,000,
 * five metadata keys, nine in ten owned here and renewing, one in ten replicated from another
 * peer), it measures a reaper run both ways in the same process, in alternating rounds:
 *
 *   - sliced: the timer-driven run (`Reaper.start`), whose scan yields the event loop every
 *     `REAPER_SLICE_ENTRIES` entries (through a clock whose timers are Node's, each callback
 *     timed): the longest single hold of the loop, and the run's total (wall time from the
 *     tick to the run's end, yields included, and the sum of its holds);
 *   - whole (the reference): `Reaper.runOnce()`, the scan and the apply in one synchronous call,
 *     as every run was before; its one hold is its total.
 *
 * Nothing expires (leases of ten minutes), so every round does the same work: the scan, which
 * is what grows with the registry. Median and max over the rounds.
 *   npx tsx bench/reaper-scan.ts [--quick]     (--quick: 100,000 only, fewer rounds)
 */
import type { Clock, TimerHandle } from '../src/clock/clock.js';
import { REAPER_SLICE_ENTRIES, Reaper } from '../src/lease/reaper.js';
import type { RegistrationInput } from '../src/registry/validate.js';
import { silentLogger } from '../src/log/logger.js';
import { createTestNode } from '../test/support/node.js';
import { record } from '../test/support/records.js';
import { percentile, progress, quick, round, table } from './lib.js';

const SIZES = quick ? [100_000] : [100_000, 500_000];
const ROUNDS = quick ? 7 : 15;
const PER_SERVICE = 1_000;
const LEASE_MS = 600_000;
const METADATA = { a: 'x', b: 'y', c: 'z', d: 'w', e: 'v' };

/** Node's timers behind the Clock interface, each callback timed: what a loop hold is. */
class TimedClock implements Clock {
  holdsMs: number[] = [];
  private tick: (() => void) | undefined;
  constructor(private readonly now: () => number) {}
  nowMs(): number {
    return this.now();
  }
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const timer = setTimeout(() => this.timed(fn), delayMs);
    return { cancel: () => clearTimeout(timer) };
  }
  /** The reaper's interval: fired by `fireTick`, so that a round starts when the bench says. */
  setInterval(fn: () => void): TimerHandle {
    this.tick = fn;
    return { cancel: () => (this.tick = undefined) };
  }
  fireTick(): void {
    this.timed(this.tick!);
  }
  private timed(fn: () => void): void {
    const startMs = performance.now();
    fn();
    this.holdsMs.push(performance.now() - startMs);
  }
}

async function measure(instances: number) {
  const { node, clock } = await createTestNode({ file: {}, start: false });
  const { registry } = node;
  const services = instances / PER_SERVICE;
  for (let s = 0; s < services; s++) {
    for (let i = 0; i < PER_SERVICE; i++) {
      const instanceId = `i-${i}`;
      if (i % 10 === 9) {
        const data = { host: '10.0.0.2', port: 1 + i, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: METADATA };
        registry.applyRemote(record({ service: `svc-${s}`, instanceId, peerId: 'peer-b', wallMs: clock.nowMs(), data, leaseDurationMs: LEASE_MS }), LEASE_MS);
      } else {
        const input: RegistrationInput = {
          namespace: 'default',
          service: `svc-${s}`,
          instanceId,
          data: { host: '10.0.0.1', port: 1 + i, securePort: null, status: 'UP', weight: 1, zone: '', metadata: METADATA },
          leaseDurationMs: LEASE_MS,
        };
        registry.register(input);
      }
    }
  }
  // Renewing instances, as in a live registry (self-preservation counts their renewals).
  clock.jump(30_000);
  for (let s = 0; s < services; s++) for (let i = 0; i < PER_SERVICE; i++) if (i % 10 !== 9) registry.heartbeat({ namespace: 'default', service: `svc-${s}`, instanceId: `i-${i}` });
  const timed = new TimedClock(() => clock.nowMs());
  const init = {
    evictionIntervalMs: 1_000,
    tombstoneTtlMs: node.config.cluster.tombstoneTtlMs,
    orphanTimeoutMs: node.config.cluster.orphanTimeoutMs,
    heartbeatIntervalMs: node.config.cluster.heartbeatIntervalMs,
    renewalWindowMs: node.config.cluster.renewalWindowMs,
  };
  const reaper = new Reaper({ clock: timed, rng: node.components.rng, registry, membership: node.membership, safety: node.safety, logger: silentLogger }, init);
  reaper.start();
  const sliced = { maxHoldMs: [] as number[], wallMs: [] as number[], busyMs: [] as number[], slices: 0 };
  const whole: number[] = [];
  const runSliced = async () => {
    const before = reaper.lastRun;
    timed.holdsMs = [];
    const startMs = performance.now();
    timed.fireTick();
    while (reaper.lastRun === before) await new Promise<void>((resolve) => setImmediate(resolve));
    sliced.wallMs.push(performance.now() - startMs);
    sliced.maxHoldMs.push(Math.max(...timed.holdsMs));
    sliced.busyMs.push(timed.holdsMs.reduce((sum, ms) => sum + ms, 0));
    sliced.slices = timed.holdsMs.length;
  };
  const runWhole = () => {
    const startMs = performance.now();
    reaper.runOnce();
    whole.push(performance.now() - startMs);
  };
  // Warm up both paths, then alternate which goes first.
  await runSliced();
  runWhole();
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      await runSliced();
      runWhole();
    } else {
      runWhole();
      await runSliced();
    }
  }
  reaper.stop();
  const median = (values: number[]) => round(percentile(values, 0.5), 2);
  const max = (values: number[]) => round(Math.max(...values), 2);
  return {
    instances,
    slices: sliced.slices,
    slicedMaxHoldMedianMs: median(sliced.maxHoldMs),
    slicedMaxHoldMaxMs: max(sliced.maxHoldMs),
    wholeHoldMedianMs: median(whole),
    wholeHoldMaxMs: max(whole),
    slicedBusyMedianMs: median(sliced.busyMs),
    slicedWallMedianMs: median(sliced.wallMs),
    holdRatio: round(percentile(sliced.maxHoldMs, 0.5) / percentile(whole, 0.5), 3),
  };
}

const rows = [];
for (const instances of SIZES) {
  progress(`reaper scan: ${instances.toLocaleString('en')} instances, ${ROUNDS} rounds, slices of ${REAPER_SLICE_ENTRIES.toLocaleString('en')}`);
  rows.push(await measure(instances));
}
console.log(table(rows));
console.log(
  'hold = longest single callback of a run on the event loop (ms); whole = runOnce, one synchronous scan + apply (the reference);\n' +
    'busy = a sliced run\'s holds added up; wall = from its tick to its end, yields included; holdRatio = sliced max hold / whole (medians).',
);
process.exit(0);
