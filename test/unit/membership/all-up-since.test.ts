import { describe, expect, it } from 'vitest';
import { seededRng } from '../../../src/clock/rng.js';
import { silentLogger } from '../../../src/log/logger.js';
import { Membership } from '../../../src/membership/membership.js';
import type { PeerDescriptor, PeerTransport } from '../../../src/transport/transport.js';
import { FakeClock } from '../../support/fake-clock.js';

const peer = (id: string): PeerDescriptor => ({ id, url: `http://${id}.sim`, region: 'sim', zone: 'z' });

/** Peers answer pings unless they are in `unreachable`. */
function membershipOf(clock: FakeClock, unreachable: Set<string>): Membership {
  const transport: PeerTransport = {
    call: async (target, method) => {
      if (unreachable.has(target.id)) throw new Error(`${method} to ${target.id} timed out`);
      return { id: target.id, incarnation: `inc-${target.id}`, membersHash: '0123456789abcdef' };
    },
  };
  return new Membership(
    { clock, rng: seededRng(5), transport, logger: silentLogger },
    {
      self: peer('a'),
      incarnation: 'inc-a',
      seeds: [peer('b'), peer('c')],
      probeIntervalMs: 100,
      probeTimeoutMs: 50,
      indirectProbes: 1,
      suspicionTimeoutMs: 300,
    },
  );
}

describe('Membership.allUpSinceMs and heldDown', () => {
  it('is the start while every peer has answered since, null while one does not, and the time the last one came back after', async () => {
    const clock = new FakeClock();
    const startedAtMs = clock.nowMs();
    const unreachable = new Set<string>();
    const membership = membershipOf(clock, unreachable);
    membership.start();
    await clock.advance(1_000);
    expect(membership.allUpSinceMs()).toBe(startedAtMs);

    unreachable.add('c');
    await clock.advanceUntil(() => membership.get('c')?.state === 'suspect', 1_000, 10);
    expect(membership.allUpSinceMs()).toBeNull();
    expect(membership.heldDown('c')).toBe(false); // suspect is not down
    await clock.advanceUntil(() => membership.get('c')?.state === 'down', 1_000, 10);
    expect(membership.allUpSinceMs()).toBeNull();
    expect(membership.heldDown('c')).toBe(true);
    expect(membership.heldDown('b')).toBe(false);
    expect(membership.heldDown('unknown')).toBe(false);

    unreachable.delete('c');
    await clock.advanceUntil(() => membership.get('c')?.state === 'up', 1_000, 10);
    const backAtMs = membership.get('c')!.sinceMs;
    expect(backAtMs).toBeGreaterThan(startedAtMs + 1_000);
    expect(membership.allUpSinceMs()).toBe(backAtMs);
    await clock.advance(1_000);
    expect(membership.allUpSinceMs()).toBe(backAtMs);
    membership.stop();
  });

  it('counts a peer learnt later from when it was learnt', async () => {
    const clock = new FakeClock();
    const membership = membershipOf(clock, new Set());
    await clock.advance(500);
    membership.learn([peer('d')]);
    expect(membership.allUpSinceMs()).toBe(clock.nowMs());
  });
});
