import { describe, expect, it } from 'vitest';
import { EVICT_MAX_PER_TURN, HOLD_MAX_PER_TURN, type ExpiryCheck } from '../../../src/lease/reaper.js';
import { isServed } from '../../../src/registry/visibility.js';
import { instance, TestCluster } from '../../support/cluster.js';
import { createTestNode } from '../../support/node.js';
import { reaperFor } from '../../support/reaper.js';
import { record } from '../../support/records.js';
import { SteppedClock } from '../../support/stepped-clock.js';

const LEASE_MS = 30_000;

/** The lease check as the peers see it while they have not answered: nothing cleared yet. */
const unanswered: ExpiryCheck = { begin: () => ({ cleared: () => false, close: () => undefined }) };

/**
 * peer-a of a three-peer cluster (the other two up), holding `count` instances of its own whose
 * lease ran out, and a reaper whose timers the test fires one by one, flagging at most
 * `holdsPerTurn` held a turn.
 */
function expiredOwned(count: number, holdsPerTurn: number) {
  const cluster = new TestCluster({ size: 3, seed: 7 });
  const node = cluster.node('peer-a');
  const key = (i: number) => ({ namespace: 'default', service: 'orders', instanceId: `i-${i}` });
  for (let i = 0; i < count; i++) node.registry.register(instance(`i-${i}`, { leaseDurationMs: LEASE_MS }));
  const stepped = new SteppedClock(cluster.clock);
  const reaper = reaperFor(node, stepped, node.membership, { holdsPerTurn }, { expiryCheck: unanswered });
  cluster.clock.jump(LEASE_MS + 1);
  const entries = () => Array.from({ length: count }, (_, i) => node.store.get(key(i))!);
  const flagged = () => entries().filter((entry) => entry.held).length;
  const served = () => entries().filter((entry) => isServed(entry, node.registry.leaseView())).length;
  reaper.start();
  return { node, reaper, stepped, key, entries, flagged, served };
}

describe('the reaper flags held, in turns, the expired instances that reads serve as held by rule', () => {
  it(`flags at most holdsPerTurn a turn (HOLD_MAX_PER_TURN = ${HOLD_MAX_PER_TURN}); every one is served meanwhile, and one heartbeated meanwhile is left alone`, () => {
    const { node, reaper, stepped, key, entries, flagged, served } = expiredOwned(8, 3);
    expect(node.membership.othersUp()).toBe(true);
    stepped.fireTick();
    const run = reaper.lastRun!;
    expect(run.checking).toBe(8);
    expect(flagged()).toBe(3);
    expect(served()).toBe(8);
    expect(stepped.pending).toBe(1);
    // A tick while holds are left starts no run of its own.
    stepped.fireTick();
    expect(reaper.lastRun).toBe(run);
    // The client of one not flagged yet heartbeats: its lease is live again, and it is never flagged.
    const waiting = entries().findIndex((entry) => !entry.held);
    node.registry.heartbeat(key(waiting));
    expect(stepped.runAll()).toBe(2);
    expect(flagged()).toBe(7);
    expect(node.store.get(key(waiting))!.held).toBe(false);
    expect(served()).toBe(8);
  });

  it('flags them all in one call from runOnce (the admin routes, tests)', () => {
    const { reaper, stepped, flagged } = expiredOwned(8, 3);
    expect(reaper.runOnce().checking).toBe(8);
    expect(flagged()).toBe(8);
    expect(stepped.pending).toBe(0);
  });
});

describe('the reaper evicts, in turns, what a run planned to evict', () => {
  /** A peer alone holding `count` instances of its own whose lease ran out; the eviction caps off. */
  async function lonePeerExpired(count: number, evictionsPerTurn: number) {
    const { node, clock } = await createTestNode({ start: false, file: { cluster: { serviceEvictionMaxRatio: 1, evictionMaxPerRunRatio: 1 } } });
    for (let i = 0; i < count; i++) node.registry.register(instance(`i-${i}`, { leaseDurationMs: LEASE_MS }));
    const stepped = new SteppedClock(clock);
    const membership = { isUp: () => true, downSinceMs: () => null, livePeerIds: () => [node.registry.peerId] };
    const reaper = reaperFor(node, stepped, membership, { evictionsPerTurn });
    clock.jump(LEASE_MS + 1);
    const key = (i: number) => ({ namespace: 'default', service: 'orders', instanceId: `i-${i}` });
    const tombstones = () => Array.from({ length: count }, (_, i) => node.store.get(key(i))!).filter((entry) => entry.record.deleted !== null).length;
    reaper.start();
    return { node, reaper, stepped, key, tombstones };
  }

  it(`evicts at most evictionsPerTurn a turn (EVICT_MAX_PER_TURN = ${EVICT_MAX_PER_TURN}), counted in the run as they are made; one heartbeated meanwhile is left alone`, async () => {
    const { node, reaper, stepped, key, tombstones } = await lonePeerExpired(8, 3);
    try {
      stepped.fireTick();
      const run = reaper.lastRun!;
      expect(run.evicted).toBe(3);
      expect(tombstones()).toBe(3);
      expect(stepped.pending).toBe(1);
      // A tick while evictions are left starts no run of its own.
      stepped.fireTick();
      expect(reaper.lastRun).toBe(run);
      const waiting = Array.from({ length: 8 }, (_, i) => i).find((i) => node.store.get(key(i))!.record.deleted === null)!;
      node.registry.heartbeat(key(waiting));
      expect(stepped.runAll()).toBe(2);
      expect(run.evicted).toBe(7);
      expect(tombstones()).toBe(7);
      expect(node.store.get(key(waiting))!.record.deleted).toBeNull();
    } finally {
      await node.stop();
    }
  });

  it('evicts them all in one call from runOnce', async () => {
    const { node, reaper, stepped, tombstones } = await lonePeerExpired(8, 3);
    try {
      expect(reaper.runOnce().evicted).toBe(8);
      expect(tombstones()).toBe(8);
      expect(stepped.pending).toBe(0);
    } finally {
      await node.stop();
    }
  });
});

describe('a reaper run with more candidates than a call can take as arguments', () => {
  it('evicts 200,000 expired instances of its own in one run without overflowing the stack (`push(...items)` did past about 125,000)', async () => {
    const { node, clock } = await createTestNode({ start: false, file: { cluster: { serviceEvictionMaxRatio: 1, evictionMaxPerRunRatio: 1 } } });
    try {
      const count = 200_000;
      const self = node.registry.peerId;
      for (let i = 0; i < count; i++) {
        node.registry.applyRemote(record({ service: `svc-${i % 100}`, instanceId: `i-${i}`, peerId: self, wallMs: clock.nowMs(), leaseDurationMs: LEASE_MS }), LEASE_MS);
      }
      clock.jump(10 * LEASE_MS);
      const run = node.reaper.runOnce();
      expect(run.evicted).toBe(count);
      expect(node.store.get({ namespace: 'default', service: 'svc-7', instanceId: 'i-107' })!.record.deleted).toBe('evict');
    } finally {
      await node.stop();
    }
  });
});
