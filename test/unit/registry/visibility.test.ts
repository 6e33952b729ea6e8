import { describe, expect, it } from 'vitest';
import { heldAfterRestart, leaseState, NO_GUARDS, type LeaseView, type PeerLiveness } from '../../../src/registry/visibility.js';
import { record, stored } from '../../support/records.js';

const NOW_MS = 1_000_000;
const LEASE_MS = 30_000;

/** Peers `up` are up; every peer has been up since `allUpSinceMs` (null: one is not; undefined: not told). */
function liveness(up: string[], allUpSinceMs: number | null | undefined): PeerLiveness {
  return {
    isUp: (id) => up.includes(id),
    ...(allUpSinceMs === undefined ? {} : { allUpSinceMs: () => allUpSinceMs }),
  };
}

const view = (peers: PeerLiveness): LeaseView => ({ nowMs: NOW_MS, selfId: 'a', liveness: peers, guards: NO_GUARDS });

describe('the restarted owner\'s hold, as every read sees it', () => {
  const own = (local: { leaseExpiresAtMs: number; heardUntilMs: number }) => stored(record({ peerId: 'a', leaseDurationMs: LEASE_MS }), local);
  const unheardExpired = own({ leaseExpiresAtMs: NOW_MS, heardUntilMs: 0 });

  it.each([
    ['own, lease live', own({ leaseExpiresAtMs: NOW_MS + 1, heardUntilMs: 0 }), liveness(['a'], null), 'live'],
    ['own, taken back and unheard, lease over, a peer does not answer', unheardExpired, liveness(['a'], null), 'held'],
    ['own, taken back and unheard, lease over, every peer answers for less than a lease', unheardExpired, liveness(['a'], NOW_MS - LEASE_MS + 1), 'held'],
    ['own, taken back and unheard, lease over, every peer answers for a whole lease', unheardExpired, liveness(['a'], NOW_MS - LEASE_MS), 'expired'],
    ['own, heard here since, lease over, a peer does not answer', own({ leaseExpiresAtMs: NOW_MS, heardUntilMs: NOW_MS }), liveness(['a'], null), 'expired'],
    ['own, unheard, lease over, liveness tells nothing of the others (a cluster of one)', unheardExpired, liveness(['a'], undefined), 'expired'],
    ['foreign, owner down, grace over, a peer does not answer', stored(record({ peerId: 'b' }), { leaseExpiresAtMs: NOW_MS }), liveness(['a'], null), 'expired'],
  ] as const)('%s: %s', (_name, entry, peers, expected) => {
    expect(leaseState(entry, view(peers))).toBe(expected);
  });

  it('is the rule the reaper holds by', () => {
    expect(heldAfterRestart(unheardExpired, NOW_MS, liveness(['a'], null))).toBe(true);
    expect(heldAfterRestart(unheardExpired, NOW_MS, liveness(['a'], NOW_MS))).toBe(true);
    expect(heldAfterRestart(unheardExpired, NOW_MS, liveness(['a'], NOW_MS - LEASE_MS))).toBe(false);
  });
});
