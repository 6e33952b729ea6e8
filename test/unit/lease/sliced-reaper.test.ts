import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MembershipView } from '../../../src/lease/lease-scan.js';
import type { ExpiryCheck, Reaper, ReaperInit, ReaperRun } from '../../../src/lease/reaper.js';
import type { RegistryNode } from '../../../src/node.js';
import type { StoredInstance } from '../../../src/registry/types.js';
import { isServed, type LeaseView } from '../../../src/registry/visibility.js';
import type { RegistrationInput } from '../../../src/registry/validate.js';
import type { FakeClock } from '../../support/fake-clock.js';
import { SteppedClock } from '../../support/stepped-clock.js';
import { createTestNode } from '../../support/node.js';
import { reaperFor } from '../../support/reaper.js';
import { record } from '../../support/records.js';

/**
 * The reaper's sliced runs (a registry larger than one slice): the scan yields between slices,
 * and what it found is re-checked before anything is done. The reaper under test gets a clock
 * whose time is the fake clock's and whose timers the test fires one by one, so a change can
 * land between two given slices.
 */
/** Membership the test sets: who is up, and since when the others are down. */
class TestMembership implements MembershipView {
  readonly downSince = new Map<string, number>();
  constructor(private readonly selfId: string) {}
  isUp(peerId: string): boolean {
    return !this.downSince.has(peerId);
  }
  downSinceMs(peerId: string): number | null {
    return this.downSince.get(peerId) ?? null;
  }
  livePeerIds(): string[] {
    return [this.selfId, 'peer-b', 'peer-c'].filter((id) => this.isUp(id));
  }
}

const LEASE_MS = 30_000;

function input(service: string, instanceId: string, port = 8080, leaseDurationMs = LEASE_MS): RegistrationInput {
  return {
    namespace: 'default',
    service,
    instanceId,
    data: { host: '10.0.0.1', port, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
    leaseDurationMs,
  };
}

function remote(service: string, instanceId: string, owner: string, wallMs: number, port = 9090) {
  return record({ service, instanceId, peerId: owner, wallMs, data: { host: '10.0.0.2', port, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} } });
}

interface Harness {
  node: RegistryNode;
  fake: FakeClock;
  stepped: SteppedClock;
  membership: TestMembership;
  reaper: Reaper;
}

async function harness(sliceEntries: number, options: { file?: Record<string, unknown>; expiryCheck?: ExpiryCheck; init?: Partial<ReaperInit> } = {}): Promise<Harness> {
  const { node, clock: fake } = await createTestNode({ start: false, ...(options.file ? { file: options.file } : {}) });
  const stepped = new SteppedClock(fake);
  const membership = new TestMembership(node.registry.peerId);
  const reaper = reaperFor(node, stepped, membership, { sliceEntries, ...options.init }, options.expiryCheck ? { expiryCheck: options.expiryCheck } : {});
  reaper.start();
  return { node, fake, stepped, membership, reaper };
}

/** What a reaper run left of every key: for comparing two registries. */
function stateOf(node: RegistryNode): Record<string, string> {
  const state: Record<string, string> = {};
  for (const entry of node.store.entries()) {
    const { record: r } = entry;
    state[`${r.service}/${r.instanceId}`] = `${r.owner} ${r.deleted ?? 'live'} hidden=${entry.hidden} held=${entry.held} lease=${entry.leaseExpiresAtMs}`;
  }
  return state;
}

const key = (service: string, instanceId: string) => ({ namespace: 'default', service, instanceId });

/** The eviction caps off: every candidate of a run is acted on, so that counts show what was. */
const UNCAPPED = { cluster: { serviceEvictionMaxRatio: 1, evictionMaxPerRunRatio: 1 } };

/**
 * Ten instances of `orders` (o-0 first in the store's order: visited by the first slice),
 * then ten of `billing`: with slices of 4, a run takes 6 slices (the last finds the end).
 */
async function twentyInstances(options: { expiryCheck?: ExpiryCheck; sliceEntries?: number; init?: Partial<ReaperInit> } = {}) {
  const h = await harness(options.sliceEntries ?? 4, { ...options, file: UNCAPPED });
  for (let i = 0; i < 10; i++) h.node.registry.register(input('orders', `o-${i}`));
  for (let i = 0; i < 10; i++) h.node.registry.register(input('billing', `b-${i}`));
  return h;
}

describe('a sliced reaper run', () => {
  it('acts as one synchronous run would on the same registry, when nothing changes between slices', async () => {
    type Op =
      | { kind: 'register'; service: number; id: number; leaseMs: number }
      | { kind: 'heartbeat' | 'cancel'; service: number; id: number }
      | { kind: 'remote'; service: number; id: number; owner: number; leaseMs: number; deleted: boolean }
      | { kind: 'advance'; ms: number }
      | { kind: 'down' | 'up'; owner: number }
      | { kind: 'run' };
    const at = { service: fc.nat(3), id: fc.nat(9) };
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('register' as const), ...at, leaseMs: fc.integer({ min: 1_000, max: 40_000 }) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('heartbeat' as const, 'cancel' as const), ...at }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('remote' as const), ...at, owner: fc.nat(1), leaseMs: fc.integer({ min: 0, max: 40_000 }), deleted: fc.boolean() }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 20_000, max: 400_000 })) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('down' as const, 'up' as const), owner: fc.nat(1) }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'run' as const }) },
    );
    const SERVICES = ['orders', 'billing', 'search', 'ledger'];
    const OWNERS = ['peer-b', 'peer-c'];

    /** Applies `ops` to a fresh harness; runs in between are whole (runOnce), the same on every side. */
    async function build(ops: Op[], sliceEntries: number, init: Partial<ReaperInit> = {}): Promise<Harness> {
      // Short tombstone, grace and orphan times, so that random registries have all four kinds of candidates.
      const h = await harness(sliceEntries, { init, file: { cluster: { tombstoneTtlMs: 20_000, ownerDownGraceMs: 5_000, orphanTimeoutMs: 30_000, partitionGuardRatio: 0.5 } } });
      for (const step of ops) {
        const { registry } = h.node;
        if (step.kind === 'register') registry.register(input(SERVICES[step.service]!, `i-${step.id}`, 8080, step.leaseMs));
        else if (step.kind === 'heartbeat' || step.kind === 'cancel') {
          if (registry.find(key(SERVICES[step.service]!, `i-${step.id}`))) registry[step.kind](key(SERVICES[step.service]!, `i-${step.id}`));
        } else if (step.kind === 'remote') {
          const rec = remote(SERVICES[step.service]!, `i-${step.id}`, OWNERS[step.owner]!, h.fake.nowMs());
          registry.applyRemote({ ...rec, ...(step.deleted ? { deleted: 'cancel' as const } : {}) }, step.leaseMs);
        } else if (step.kind === 'advance') h.fake.jump(step.ms);
        else if (step.kind === 'down') {
          if (!h.membership.downSince.has(OWNERS[step.owner]!)) h.membership.downSince.set(OWNERS[step.owner]!, h.fake.nowMs());
        } else if (step.kind === 'up') h.membership.downSince.delete(OWNERS[step.owner]!);
        else h.reaper.runOnce();
      }
      return h;
    }

    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 20, maxLength: 100 }), fc.integer({ min: 1, max: 7 }), fc.integer({ min: 1, max: 5 }), async (ops, sliceEntries, perTurn) => {
        const whole = await build(ops, sliceEntries);
        const sliced = await build(ops, sliceEntries);
        // Its decisions, hides, holds and evictions in turns of `perTurn` too.
        const stepwise = await build(ops, sliceEntries, { decisionsPerTurn: perTurn, hidesPerTurn: perTurn, holdsPerTurn: perTurn, evictionsPerTurn: perTurn });
        expect(stateOf(sliced.node)).toEqual(stateOf(whole.node));
        expect(stateOf(stepwise.node)).toEqual(stateOf(whole.node));
        const size = sliced.node.store.size;
        const wholeRun = whole.reaper.runOnce();
        sliced.stepped.fireTick();
        const slices = sliced.stepped.runAll();
        // Only a registry larger than one slice is sliced: one slice per `sliceEntries` entries, and
        // one that finds the end when the last slice ended on the last entry.
        expect(slices).toBe(size <= sliceEntries ? 0 : Math.floor(size / sliceEntries));
        expect(sliced.reaper.lastRun).toEqual(wholeRun);
        expect(stateOf(sliced.node)).toEqual(stateOf(whole.node));
        stepwise.stepped.fireTick();
        stepwise.stepped.runAll();
        expect(stepwise.reaper.lastRun).toEqual(wholeRun);
        expect(stateOf(stepwise.node)).toEqual(stateOf(whole.node));
      }),
      { numRuns: 120, seed: 20261201 },
    );
  });

  it('visits no more than the slice bound per slice, and every entry once', async () => {
    const h = await twentyInstances();
    for (let i = 0; i < 3; i++) h.node.registry.register(input('search', `s-${i}`));
    // Count the entries each slice takes from the store's own iterators.
    let visited = 0;
    for (const service of h.node.store.allServices()) {
      const values = service.instances.values.bind(service.instances);
      service.instances.values = () => {
        const inner = values();
        const counting = {
          next() {
            const next = inner.next();
            if (!next.done) visited += 1;
            return next;
          },
          [Symbol.iterator]() {
            return counting;
          },
        };
        return counting as unknown as MapIterator<StoredInstance>;
      };
    }
    const perSlice: number[] = [];
    h.stepped.fireTick();
    perSlice.push(visited);
    while (h.stepped.pending > 0) {
      const before = visited;
      h.stepped.runSlice();
      perSlice.push(visited - before);
    }
    expect(perSlice).toEqual([4, 4, 4, 4, 4, 3]);
    expect(visited).toBe(23);
    expect(h.reaper.lastRun).toBeDefined();
  });

  it('keeps a registry of one slice or less to one synchronous run', async () => {
    const h = await harness(20, { file: UNCAPPED });
    for (let i = 0; i < 20; i++) h.node.registry.register(input('orders', `o-${i}`));
    h.fake.jump(LEASE_MS + 1);
    h.stepped.fireTick();
    expect(h.stepped.pending).toBe(0);
    expect(h.reaper.lastRun?.evicted).toBe(20);
  });

  it('evicts, hides and purges what the slices found when nothing changed meanwhile', async () => {
    const h = await twentyInstances();
    h.node.registry.applyRemote(remote('orders', 'r-1', 'peer-b', h.fake.nowMs()), 1_000);
    h.node.registry.cancel(key('billing', 'b-9'));
    h.membership.downSince.set('peer-b', h.fake.nowMs());
    h.fake.jump(Math.max(LEASE_MS, h.node.config.cluster.tombstoneTtlMs, h.node.config.cluster.ownerDownGraceMs) + 1);
    h.stepped.fireTick();
    expect(h.reaper.lastRun).toBeUndefined();
    expect(h.stepped.runAll()).toBe(5);
    expect(h.reaper.lastRun).toMatchObject({ evicted: 19, hidden: 1, tombstonesPurged: 1 });
  });
});

describe('a change between two slices keeps a candidate from being acted on', () => {
  /** Lets the first slice find o-0 expired (with everything else), applies `change`, ends the run. */
  async function runAround(h: Harness, change: () => void): Promise<ReaperRun> {
    h.stepped.fireTick();
    expect(h.stepped.pending).toBe(1);
    change();
    h.stepped.runAll();
    return h.reaper.lastRun!;
  }

  it('a heartbeat renewing the expired instance', async () => {
    const h = await twentyInstances();
    h.fake.jump(LEASE_MS + 1);
    const run = await runAround(h, () => h.node.registry.heartbeat(key('orders', 'o-0')));
    expect(run.evicted).toBe(19);
    expect(h.node.registry.find(key('orders', 'o-0'))?.record.deleted).toBeNull();
  });

  it('a register again with new data (a new version)', async () => {
    const h = await twentyInstances();
    h.fake.jump(LEASE_MS + 1);
    const run = await runAround(h, () => h.node.registry.register(input('orders', 'o-0', 8081)));
    expect(run.evicted).toBe(19);
    expect(h.node.registry.find(key('orders', 'o-0'))?.record.data.port).toBe(8081);
  });

  it('a register again whose lease has run out already: a new entry, still expired, still not this run', async () => {
    const h = await twentyInstances();
    h.fake.jump(LEASE_MS + 1);
    const run = await runAround(h, () => h.node.registry.register(input('orders', 'o-0', 8081, 1)));
    // The new entry is expired too, but the scan never saw it: the next run decides.
    h.fake.jump(2);
    expect(run.evicted).toBe(19);
    expect(h.node.store.get(key('orders', 'o-0'))?.record.deleted).toBeNull();
    expect(h.reaper.runOnce().evicted).toBe(1);
  });

  it('a takeover replicated from another peer', async () => {
    const h = await twentyInstances();
    h.fake.jump(LEASE_MS + 1);
    const run = await runAround(h, () => h.node.registry.applyRemote(remote('orders', 'o-0', 'peer-c', h.fake.nowMs()), LEASE_MS));
    expect(run.evicted).toBe(19);
    expect(h.node.store.get(key('orders', 'o-0'))?.record).toMatchObject({ owner: 'peer-c', deleted: null });
  });

  it('a delete', async () => {
    const h = await twentyInstances();
    h.fake.jump(LEASE_MS + 1);
    const run = await runAround(h, () => h.node.registry.cancel(key('orders', 'o-0')));
    expect(run.evicted).toBe(19);
    expect(h.node.store.get(key('orders', 'o-0'))?.record.deleted).toBe('cancel');
  });

  it("a replicated update of a down owner's instance", async () => {
    const h = await twentyInstances();
    const startMs = h.fake.nowMs();
    h.node.registry.applyRemote(remote('orders', 'o-0', 'peer-b', startMs), 1_000);
    h.membership.downSince.set('peer-b', startMs);
    h.fake.jump(LEASE_MS + h.node.config.cluster.ownerDownGraceMs + 1);
    const run = await runAround(h, () => h.node.registry.applyRemote(remote('orders', 'o-0', 'peer-b', h.fake.nowMs(), 9091), LEASE_MS));
    expect(run.hidden).toBe(0);
    expect(h.node.store.get(key('orders', 'o-0'))).toMatchObject({ hidden: false, record: { data: { port: 9091 } } });
  });

  it('its owner coming back up', async () => {
    const h = await twentyInstances();
    h.node.registry.applyRemote(remote('orders', 'o-0', 'peer-b', h.fake.nowMs()), 1_000);
    h.membership.downSince.set('peer-b', h.fake.nowMs());
    h.fake.jump(LEASE_MS + h.node.config.cluster.ownerDownGraceMs + 1);
    const run = await runAround(h, () => h.membership.downSince.delete('peer-b'));
    expect(run.hidden).toBe(0);
    expect(h.node.store.get(key('orders', 'o-0'))?.hidden).toBe(false);
  });

  it('a tombstone replaced by a new registration', async () => {
    const h = await twentyInstances();
    h.node.registry.cancel(key('orders', 'o-0'));
    h.fake.jump(h.node.config.cluster.tombstoneTtlMs + 1);
    for (let i = 1; i < 10; i++) h.node.registry.heartbeat(key('orders', `o-${i}`));
    for (let i = 0; i < 10; i++) h.node.registry.heartbeat(key('billing', `b-${i}`));
    const run = await runAround(h, () => h.node.registry.register(input('orders', 'o-0')));
    expect(run.tombstonesPurged).toBe(0);
    expect(h.node.store.get(key('orders', 'o-0'))?.record.deleted).toBeNull();
  });
});

describe('sliced runs and the timer', () => {
  /** Twenty expired instances, and a run two slices in. */
  async function midRun(): Promise<Harness> {
    const h = await twentyInstances();
    h.fake.jump(LEASE_MS + 1);
    h.stepped.fireTick();
    h.stepped.runSlice();
    return h;
  }

  it('a tick during a sliced run starts no second run', async () => {
    const h = await midRun();
    h.stepped.fireTick();
    h.stepped.fireTick();
    expect(h.stepped.pending).toBe(1);
    expect(h.stepped.runAll()).toBe(4);
    expect(h.reaper.lastRun?.evicted).toBe(20);
  });

  it('stop() drops a run in progress: nothing of it is done', async () => {
    const h = await midRun();
    h.reaper.stop();
    expect(h.stepped.runAll()).toBe(0);
    expect(h.reaper.lastRun).toBeUndefined();
    expect(h.node.registry.find(key('orders', 'o-0'))).toBeDefined();
  });

  it('runOnce() during a sliced run supersedes it', async () => {
    const h = await midRun();
    expect(h.reaper.runOnce().evicted).toBe(20);
    expect(h.stepped.runAll()).toBe(0);
  });

  it('runSoon() is a run in turns that supersedes the one going, answered once its decisions are made, or once it is dropped', async () => {
    const h = await midRun();
    let answered = false;
    const soon = h.reaper.runSoon().then(() => (answered = true));
    await Promise.resolve();
    expect(answered).toBe(false);
    expect(h.reaper.lastRun).toBeUndefined();
    h.stepped.runAll();
    await soon;
    expect(h.reaper.lastRun?.evicted).toBe(20);
    // Dropped by a stop before its decisions: answered all the same, nothing done.
    const other = await twentyInstances();
    other.fake.jump(LEASE_MS + 1);
    const dropped = other.reaper.runSoon();
    other.reaper.stop();
    await dropped;
    expect(other.reaper.lastRun).toBeUndefined();
    expect(other.stepped.runAll()).toBe(0);
  });

  it("a lease check's answer starts a sliced run, and none while one is going", async () => {
    // A check that asks about everything the first time, and clears it once answered.
    let answer: (() => void) | undefined;
    let asks = 0;
    const expiryCheck: ExpiryCheck = {
      begin(_nowMs, answered) {
        asks += 1;
        const first = answer === undefined;
        answer ??= answered;
        return { cleared: () => !first, close: () => undefined };
      },
    };
    const h = await twentyInstances({ expiryCheck });
    h.fake.jump(LEASE_MS + 1);
    h.stepped.fireTick();
    h.stepped.runAll();
    expect(h.reaper.lastRun?.checking).toBe(20);
    // The answer while no run is going: a run, sliced like a tick's.
    const first = h.reaper.lastRun;
    answer!();
    expect(h.reaper.lastRun).toBe(first);
    expect(h.stepped.pending).toBe(1);
    // The answer again mid-run: nothing more starts; the run in progress evicts them.
    answer!();
    expect(h.stepped.pending).toBe(1);
    h.stepped.runAll();
    expect(asks).toBe(2);
    expect(h.reaper.lastRun?.evicted).toBe(20);
  });
});

describe("a run's decisions in turns (decisionsPerTurn)", () => {
  /** Twenty instances in one slice, deciding on one entry a turn. */
  const oneSlice = { sliceEntries: 20, init: { decisionsPerTurn: 1 } };

  it('spreads a run over turns: nothing is evicted and every instance is served until its decisions end', async () => {
    const h = await twentyInstances(oneSlice);
    h.fake.jump(LEASE_MS + 1);
    h.stepped.fireTick();
    let turns = 1;
    while (h.stepped.pending > 0) {
      expect(h.reaper.lastRun).toBeUndefined();
      expect(h.node.store.size).toBe(20);
      expect([...h.node.store.entries()].every((entry) => entry.record.deleted === null)).toBe(true);
      h.stepped.runSlice();
      turns += 1;
    }
    // 20 through the restart rule, 19 swaps of the shuffle, 20 through the plan, a turn for the acts.
    expect(turns).toBe(20 + 19 + 20 + 1);
    expect(h.reaper.lastRun?.evicted).toBe(20);
  });

  /**
   * For every turn `k` of a run whose decisions take turns (a new harness each), applies
   * `change` after `k` turns and checks `after` once the run is done: whatever the turn the
   * change lands in, the run leaves the changed entry alone.
   */
  async function atEveryTurn(setUp: () => Promise<Harness>, change: (h: Harness) => void, after: (h: Harness, run: ReaperRun) => void): Promise<number> {
    let turnsTried = 0;
    for (let k = 0; ; k++) {
      const h = await setUp();
      h.stepped.fireTick();
      for (let t = 0; t < k && h.stepped.pending > 0; t++) h.stepped.runSlice();
      if (h.stepped.pending === 0) return turnsTried;
      change(h);
      h.stepped.runAll();
      after(h, h.reaper.lastRun!);
      turnsTried += 1;
    }
  }

  it('a heartbeat in any turn keeps the instance from eviction', async () => {
    const setUp = async () => {
      const h = await twentyInstances(oneSlice);
      h.fake.jump(LEASE_MS + 1);
      return h;
    };
    const tried = await atEveryTurn(
      setUp,
      (h) => h.node.registry.heartbeat(key('orders', 'o-0')),
      (h, run) => {
        expect(run.evicted).toBe(19);
        expect(h.node.store.get(key('orders', 'o-0'))?.record.deleted).toBeNull();
      },
    );
    expect(tried).toBe(59);
  });

  it("a register again in any turn keeps the tombstone's key from being purged", async () => {
    // Sliced, so that the purge comes a turn after the re-check of what the slices found.
    const setUp = async () => {
      const h = await twentyInstances({ init: { decisionsPerTurn: 1 } });
      h.node.registry.cancel(key('orders', 'o-0'));
      h.fake.jump(h.node.config.cluster.tombstoneTtlMs + 1);
      for (let i = 1; i < 10; i++) h.node.registry.heartbeat(key('orders', `o-${i}`));
      for (let i = 0; i < 10; i++) h.node.registry.heartbeat(key('billing', `b-${i}`));
      return h;
    };
    const tried = await atEveryTurn(
      setUp,
      (h) => h.node.registry.register(input('orders', 'o-0')),
      // A purge before the register took the tombstone (the new record is stored after it);
      // after it, none takes the new record.
      (h) => expect(h.node.store.get(key('orders', 'o-0'))?.record.deleted).toBeNull(),
    );
    // Five slices, a sixth that re-checks the one candidate, a turn for the purge, one for the acts.
    expect(tried).toBe(7);
  });

  it("keeps what the partition guard held served in every turn when the guard lifts by itself, and a view built meanwhile too", async () => {
    const h = await harness(1_000, { init: { decisionsPerTurn: 2 }, file: { cluster: { partitionGuardRatio: 0.6, ownerDownGraceMs: 5_000 } } });
    const startMs = h.fake.nowMs();
    for (let i = 0; i < 10; i++) h.node.registry.applyRemote(remote('orders', `b-${i}`, 'peer-b', startMs), 1_000);
    for (let i = 0; i < 10; i++) h.node.registry.applyRemote(remote('billing', `c-${i}`, 'peer-c', startMs), 1_000);
    h.membership.downSince.set('peer-b', startMs);
    h.membership.downSince.set('peer-c', startMs);
    h.fake.jump(120_000);
    // Both owners down, the whole registry: the guard holds their instances, served by it.
    expect(h.reaper.runOnce().held.partitionGuard).toBe(20);
    const leases = (): LeaseView => ({ nowMs: h.fake.nowMs(), selfId: h.node.registry.peerId, liveness: h.membership, guards: h.node.safety.guards() });
    const served = () => Array.from({ length: 10 }, (_, i) => h.node.store.get(key('orders', `b-${i}`))!).filter((entry) => isServed(entry, leases())).length;
    expect(served()).toBe(10);
    // peer-c is back: half the registry down, under the ratio: the next run lifts the guard, and
    // peer-b's instances get a new grace instead.
    h.membership.downSince.delete('peer-c');
    h.fake.jump(1_000);
    h.stepped.fireTick();
    const view = h.node.views.stable('default', 'orders', leases());
    const perTurn = [served()];
    while (h.stepped.pending > 0) {
      h.stepped.runSlice();
      perTurn.push(served());
    }
    expect(h.node.safety.guards().holdDownOwners).toBe(false);
    expect(perTurn.every((count) => count === 10)).toBe(true);
    expect(view.served).toHaveLength(10);
    expect(h.node.views.stable('default', 'orders', leases()).served).toHaveLength(10);
  });

  it('a step that throws ends its run: the next tick runs again', async () => {
    const h = await harness(1_000, { file: UNCAPPED });
    for (let i = 0; i < 5; i++) h.node.registry.register(input('orders', `o-${i}`));
    h.fake.jump(LEASE_MS + 1);
    let fail = true;
    h.node.store.onChange(() => {
      if (!fail) return;
      fail = false;
      throw new Error('a listener failed once');
    });
    expect(() => h.stepped.fireTick()).toThrow('a listener failed once');
    h.stepped.fireTick();
    h.stepped.runAll();
    expect([...h.node.store.entries()].filter((entry) => entry.record.deleted === null)).toHaveLength(0);
  });

  it("its owner coming back in any turn keeps a down owner's instance from being hidden", async () => {
    const setUp = async () => {
      const h = await twentyInstances(oneSlice);
      for (let i = 0; i < 5; i++) h.node.registry.applyRemote(remote('orders', `r-${i}`, 'peer-b', h.fake.nowMs()), 1_000);
      h.membership.downSince.set('peer-b', h.fake.nowMs());
      h.fake.jump(h.node.config.cluster.ownerDownGraceMs + 1_001);
      return h;
    };
    const tried = await atEveryTurn(
      setUp,
      (h) => h.membership.downSince.delete('peer-b'),
      (h, run) => {
        expect(run.hidden).toBe(0);
        for (let i = 0; i < 5; i++) expect(h.node.store.get(key('orders', `r-${i}`))?.hidden).toBe(false);
      },
    );
    expect(tried).toBeGreaterThan(0);
  });
});
