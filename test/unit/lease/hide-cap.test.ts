import { describe, expect, it } from 'vitest';
import type { MembershipView } from '../../../src/lease/lease-scan.js';
import { HIDE_MAX_PER_TURN } from '../../../src/lease/reaper.js';
import { WRITE_LINES_PER_SECOND } from '../../../src/registry/registry.js';
import { createTestNode } from '../../support/node.js';
import { reaperFor } from '../../support/reaper.js';
import { SteppedClock } from '../../support/stepped-clock.js';
import { record } from '../../support/records.js';
import { recordingLogger } from '../../support/recording-logger.js';

const LEASE_MS = 30_000;

/** Three other peers; `down` holds the ones down and since when. */
function membershipOf(selfId: string, down: Map<string, number>): MembershipView {
  return {
    isUp: (peerId) => !down.has(peerId),
    downSinceMs: (peerId) => down.get(peerId) ?? null,
    livePeerIds: () => [selfId, 'peer-b', 'peer-c', 'peer-d'].filter((peerId) => !down.has(peerId)),
  };
}

/**
 * A node holding `foreign` instances of peer-b and ten times as many of peer-c (so that peer-b
 * down stays under the partition guard's share), peer-b down past its grace, and a reaper that
 * hides at most `hidesPerTurn` a turn of the event loop.
 */
async function ownerDownPastGrace(foreign: number, hidesPerTurn?: number) {
  const logger = recordingLogger();
  const { node, clock } = await createTestNode({ start: false, logger });
  const key = (i: number) => ({ namespace: 'default', service: `svc-${i % 3}`, instanceId: `b-${i}` });
  const data = { host: '10.0.0.2', port: 9090, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: {} };
  for (let i = 0; i < foreign; i++) node.registry.applyRemote(record({ ...key(i), peerId: 'peer-b', wallMs: clock.nowMs(), data, leaseDurationMs: LEASE_MS }), LEASE_MS);
  for (let i = 0; i < foreign * 10; i++) {
    node.registry.applyRemote(record({ service: 'other', instanceId: `c-${i}`, peerId: 'peer-c', wallMs: clock.nowMs(), data, leaseDurationMs: 3_600_000 }), 3_600_000);
  }
  const down = new Map([['peer-b', clock.nowMs()]]);
  const { cluster } = node.config;
  const stepped = new SteppedClock(clock);
  const reaper = reaperFor(node, stepped, membershipOf(node.registry.peerId, down), hidesPerTurn === undefined ? {} : { hidesPerTurn }, { logger });
  clock.jump(LEASE_MS + cluster.ownerDownGraceMs + 1);
  const hiddenNow = () => Array.from({ length: foreign }, (_, i) => node.store.get(key(i))?.hidden === true).filter(Boolean).length;
  reaper.start();
  return { node, reaper, stepped, down, key, hiddenNow, logger };
}

describe('the reaper hides the instances of an owner down past its grace', () => {
  it(`a timer-driven run hides at most hidesPerTurn a turn (HIDE_MAX_PER_TURN = ${HIDE_MAX_PER_TURN}), the rest in its next turns, each looked at again`, async () => {
    const { node, reaper, stepped, key, hiddenNow } = await ownerDownPastGrace(8, 3);
    try {
      stepped.fireTick();
      const run = reaper.lastRun!;
      expect(run.hidden).toBe(3);
      expect(hiddenNow()).toBe(3);
      expect(stepped.pending).toBe(1);
      // A tick while hides are left starts no run of its own.
      stepped.fireTick();
      expect(reaper.lastRun).toBe(run);
      // A client heartbeats one of those not hidden yet: this peer takes it over, and it is never hidden.
      const waiting = Array.from({ length: 8 }, (_, i) => i).find((i) => node.store.get(key(i))?.hidden === false)!;
      node.registry.heartbeat(key(waiting));
      expect(node.store.get(key(waiting))?.record.owner).toBe(node.registry.peerId);
      expect(stepped.runAll()).toBe(2);
      expect(run.hidden).toBe(7);
      expect(hiddenNow()).toBe(7);
      expect(node.store.get(key(waiting))).toMatchObject({ hidden: false, record: { deleted: null } });
      // Nothing left: the next tick is a run of its own, which finds nothing to hide.
      stepped.fireTick();
      expect(reaper.lastRun).not.toBe(run);
      expect(reaper.lastRun?.hidden).toBe(0);
    } finally {
      await node.stop();
    }
  });

  it('leaves the rest alone when their owner comes back between two turns', async () => {
    const { node, reaper, stepped, down, hiddenNow } = await ownerDownPastGrace(8, 3);
    try {
      stepped.fireTick();
      expect(hiddenNow()).toBe(3);
      down.delete('peer-b');
      stepped.runAll();
      expect(hiddenNow()).toBe(3);
      expect(reaper.lastRun?.hidden).toBe(3);
    } finally {
      await node.stop();
    }
  });

  it('runOnce (the admin routes) hides every one in one call', async () => {
    const { node, reaper, stepped, hiddenNow } = await ownerDownPastGrace(8, 3);
    try {
      expect(reaper.runOnce().hidden).toBe(8);
      expect(hiddenNow()).toBe(8);
      expect(stepped.pending).toBe(0);
    } finally {
      await node.stop();
    }
  });

  it('logs the hidden instances within the instance writes budget', async () => {
    const count = WRITE_LINES_PER_SECOND + 20;
    const { node, reaper, hiddenNow, logger } = await ownerDownPastGrace(count);
    try {
      expect(reaper.runOnce().hidden).toBe(count);
      expect(hiddenNow()).toBe(count);
      const lines = (level: string) => logger.lines.filter((line) => line.level === level && line.msg.startsWith('instance hidden'));
      expect(lines('info')).toHaveLength(WRITE_LINES_PER_SECOND);
      expect(lines('debug')).toHaveLength(20);
    } finally {
      await node.stop();
    }
  });
});
