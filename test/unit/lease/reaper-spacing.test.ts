import { describe, expect, it } from 'vitest';
import type { MembershipView } from '../../../src/lease/lease-scan.js';
import { REAPER_SPACING_MAX_INTERVALS, type ExpiryCheck, type ReaperInit } from '../../../src/lease/reaper.js';
import type { FakeClock } from '../../support/fake-clock.js';
import { createTestNode } from '../../support/node.js';
import { reaperFor } from '../../support/reaper.js';
import { SteppedClock } from '../../support/stepped-clock.js';

/**
 * A large registry's runs are spaced so that the scan takes at most its share of the loop
 * (`REAPER_SCAN_SHARE_MAX`). The reaper's clock here moves 1 ms at every reading, so each of a
 * run's slices holds the loop 1 ms, as a slice of a large registry holds it for real: the test
 * knows what a scan cost without timing anything.
 */
class SlowScanClock extends SteppedClock {
  private readings = 0;
  /** Where the wall clock was set, relative to the fake clock (`setBack`). */
  private offsetMs = 0;
  constructor(private readonly base: FakeClock) {
    super(base);
  }
  override nowMs(): number {
    this.readings += 1;
    return this.base.nowMs() + this.offsetMs + this.readings;
  }
  /** The wall clock set back by `ms` (an NTP step). */
  setBack(ms: number): void {
    this.offsetMs -= ms;
  }
}

const INTERVAL_MS = 1_000;
const everyoneUp: MembershipView = { isUp: () => true, downSinceMs: () => null, livePeerIds: () => ['peer-a'] };

async function harness(init: Partial<ReaperInit>, options: { leaseDurationMs?: number; expiryCheck?: ExpiryCheck } = {}) {
  const { node, clock: fake } = await createTestNode({ start: false, file: { cluster: { serviceEvictionMaxRatio: 1, evictionMaxPerRunRatio: 1 } } });
  const clock = new SlowScanClock(fake);
  const reaper = reaperFor(node, clock, everyoneUp, { evictionIntervalMs: INTERVAL_MS, sliceEntries: 4, ...init }, options.expiryCheck ? { expiryCheck: options.expiryCheck } : {});
  for (let i = 0; i < 20; i++) {
    node.registry.register({
      namespace: 'default',
      service: 'orders',
      instanceId: `o-${i}`,
      data: { host: '10.0.0.1', port: 8080 + i, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
      leaseDurationMs: options.leaseDurationMs ?? 600_000,
    });
  }
  reaper.start();
  /** Moves time on by `ms`, fires the tick and runs what it started; whether it started a run. */
  const tickAfter = async (ms: number): Promise<boolean> => {
    await fake.advance(ms);
    const before = reaper.lastRun;
    clock.fireTick();
    clock.runAll();
    return reaper.lastRun !== before;
  };
  return { node, clock, reaper, tickAfter };
}

describe('the spacing of a large registry’s reaper runs', () => {
  it('runs at every tick while a scan takes no more than its share of the interval', async () => {
    const { reaper, tickAfter } = await harness({ scanShareMax: 0.05 });
    expect(await tickAfter(0)).toBe(true);
    // Six slices (the last finds the end): 6 ms of a 50 ms share.
    expect(reaper.lastRun!.scanMs).toBe(6);
    for (let tick = 0; tick < 3; tick++) expect(await tickAfter(INTERVAL_MS)).toBe(true);
  });

  it('waits, past a scan over its share, until the scan is that share of the time since the last run began', async () => {
    // 6 ms of scan at a share of 0.002: a run every 3 s.
    const { reaper, tickAfter } = await harness({ scanShareMax: 0.002 });
    expect(await tickAfter(0)).toBe(true);
    expect(reaper.lastRun!.scanMs).toBe(6);
    expect(await tickAfter(INTERVAL_MS)).toBe(false);
    expect(await tickAfter(INTERVAL_MS)).toBe(false);
    expect(await tickAfter(INTERVAL_MS)).toBe(true);
    expect(await tickAfter(INTERVAL_MS)).toBe(false);
  });

  it(`spaces runs by at most ${REAPER_SPACING_MAX_INTERVALS} intervals, whatever the scan took`, async () => {
    // 6 ms at a share of 0.0001 asks for a minute: held to ten intervals.
    const { tickAfter } = await harness({ scanShareMax: 0.0001 });
    expect(await tickAfter(0)).toBe(true);
    for (let tick = 1; tick < REAPER_SPACING_MAX_INTERVALS; tick++) expect(await tickAfter(INTERVAL_MS)).toBe(false);
    expect(await tickAfter(INTERVAL_MS)).toBe(true);
  });

  it('runs at the next tick after the wall clock was set back, rather than waiting out the step', async () => {
    const { clock, tickAfter } = await harness({ scanShareMax: 0.002 });
    expect(await tickAfter(0)).toBe(true);
    clock.setBack(3_600_000);
    expect(await tickAfter(INTERVAL_MS)).toBe(true);
  });

  it("starts a run at once when the peers answer a lease check, however the runs are spaced", async () => {
    // Asks about every expired instance the first time, and clears them once answered.
    let answer: (() => void) | undefined;
    const expiryCheck: ExpiryCheck = {
      begin(_nowMs, answered) {
        const first = answer === undefined;
        answer ??= answered;
        return { cleared: () => !first, close: () => undefined };
      },
    };
    const { clock, reaper, tickAfter } = await harness({ scanShareMax: 0.002 }, { leaseDurationMs: 1_000, expiryCheck });
    expect(await tickAfter(2 * INTERVAL_MS)).toBe(true);
    expect(reaper.lastRun!.checking).toBe(20);
    answer!();
    clock.runAll();
    expect(reaper.lastRun!.evicted).toBe(20);
  });

  it('purges as many tombstones per interval when its runs are spaced as when it runs at every tick', async () => {
    const { node, reaper, tickAfter } = await harness({ scanShareMax: 0.002, purgeMaxPerRun: 2, tombstoneTtlMs: 1_000 });
    for (let i = 0; i < 20; i++) node.registry.cancel({ namespace: 'default', service: 'orders', instanceId: `o-${i}` });
    // The first run: 2 (the tombstones are not past their TTL before the second interval).
    expect(await tickAfter(2 * INTERVAL_MS)).toBe(true);
    const first = reaper.lastRun!.tombstonesPurged;
    expect(await tickAfter(INTERVAL_MS)).toBe(false);
    expect(await tickAfter(INTERVAL_MS)).toBe(false);
    // Three intervals later: three intervals' worth.
    expect(await tickAfter(INTERVAL_MS)).toBe(true);
    expect([first, reaper.lastRun!.tombstonesPurged]).toEqual([2, 6]);
  });
});
