import { describe, expect, it } from 'vitest';
import type { MembershipView } from '../../../src/lease/lease-scan.js';
import { HIDE_MAX_PER_RUN, Reaper } from '../../../src/lease/reaper.js';
import { WRITE_LINES_PER_SECOND } from '../../../src/registry/registry.js';
import { createTestNode } from '../../support/node.js';
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
 * hides at most `hideMaxPerRun` a run.
 */
async function ownerDownPastGrace(foreign: number, hideMaxPerRun?: number) {
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
  const reaper = new Reaper(
    { clock, rng: node.components.rng, registry: node.registry, membership: membershipOf(node.registry.peerId, down), safety: node.safety, logger },
    {
      evictionIntervalMs: cluster.evictionIntervalMs,
      tombstoneTtlMs: cluster.tombstoneTtlMs,
      orphanTimeoutMs: cluster.orphanTimeoutMs,
      heartbeatIntervalMs: cluster.heartbeatIntervalMs,
      renewalWindowMs: cluster.renewalWindowMs,
      ...(hideMaxPerRun === undefined ? {} : { hideMaxPerRun }),
    },
  );
  clock.jump(LEASE_MS + cluster.ownerDownGraceMs + 1);
  const hiddenNow = () => Array.from({ length: foreign }, (_, i) => node.store.get(key(i))?.hidden === true).filter(Boolean).length;
  return { node, reaper, key, hiddenNow, logger };
}

describe('the reaper hides the instances of an owner down past its grace', () => {
  it(`at most hideMaxPerRun a run (HIDE_MAX_PER_RUN = ${HIDE_MAX_PER_RUN}), the rest in the next runs, each looked at again`, async () => {
    const { node, reaper, key, hiddenNow } = await ownerDownPastGrace(8, 3);
    try {
      expect(reaper.runOnce().hidden).toBe(3);
      expect(hiddenNow()).toBe(3);
      // A client heartbeats one of those still served: this peer takes it over, and it is never hidden.
      const waiting = Array.from({ length: 8 }, (_, i) => i).find((i) => node.store.get(key(i))?.hidden === false)!;
      node.registry.heartbeat(key(waiting));
      expect(node.store.get(key(waiting))?.record.owner).toBe(node.registry.peerId);
      expect(reaper.runOnce().hidden).toBe(3);
      expect(reaper.runOnce().hidden).toBe(1);
      expect(reaper.runOnce().hidden).toBe(0);
      expect(hiddenNow()).toBe(7);
      expect(node.store.get(key(waiting))).toMatchObject({ hidden: false, record: { deleted: null } });
    } finally {
      await node.stop();
    }
  });

  it('hides everything in one run when there are no more than the cap, and logs them within the instance writes budget', async () => {
    const count = WRITE_LINES_PER_SECOND + 20;
    const { node, reaper, hiddenNow, logger } = await ownerDownPastGrace(count);
    try {
      expect(count).toBeLessThan(HIDE_MAX_PER_RUN);
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
