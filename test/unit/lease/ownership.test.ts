import { describe, expect, it } from 'vitest';
import {
  heartbeatDecision,
  ownerDownGraceMs,
  ownerDownLeaseExpiresAtMs,
  ownLease,
  registeredLease,
  relayedLease,
  remoteLease,
  restoredLease,
  takenOverLease,
  takesOverAtExpiry,
} from '../../../src/lease/ownership.js';
import { NO_LEASE } from '../../../src/registry/store.js';
import type { StoredInstance } from '../../../src/registry/types.js';
import type { LeaseView, PeerLiveness } from '../../../src/registry/visibility.js';
import { NO_GUARDS } from '../../../src/registry/visibility.js';
import { record, stored } from '../../support/records.js';

const now = 100_000;
const lease = 30_000;

/** Liveness where the peers in `up` answer and those in `heldDown` are past suspicion. */
function liveness(up: string[], heldDown: string[] = []): PeerLiveness {
  return { isUp: (id) => id === 'self' || up.includes(id), heldDown: (id) => heldDown.includes(id) };
}

function view(up: string[]): LeaseView {
  return { nowMs: now, selfId: 'self', liveness: liveness(up), guards: NO_GUARDS };
}

/** An instance written by `owner` at `wallMs` (its version), with local lease state. */
function entryOf(owner: string, local: Partial<StoredInstance> = {}, wallMs = 50_000): StoredInstance {
  return stored(record({ peerId: owner, wallMs, leaseDurationMs: lease }), local);
}

describe('heartbeatDecision', () => {
  const reported = {};
  it.each([
    ['an instance this peer owns', entryOf('self'), ['b'], [], 'renew'],
    ['one this peer owns, itself listed as restarted', entryOf('self'), ['b'], [['self', 60_000]], 'renew'],
    ['a live owner', entryOf('b', reported), ['b'], [], 'relay'],
    ['a down owner', entryOf('b', reported), [], [], { takeover: 'owner down' }],
    ['a live owner, the instance hidden (it was down)', entryOf('b', { ...reported, hidden: true }), ['b'], [], { takeover: 'owner down' }],
    ['a live owner that restarted after writing the record', entryOf('b', reported), ['b'], [['b', 60_000]], { takeover: 'owner restarted' }],
    ['a down owner that restarted after writing the record', entryOf('b', reported), [], [['b', 60_000]], { takeover: 'owner restarted' }],
    ['a live owner that restarted when it wrote the record', entryOf('b', reported), ['b'], [['b', 50_000]], 'relay'],
    ['a live owner that restarted before writing the record', entryOf('b', reported), ['b'], [['b', 40_000]], 'relay'],
    ['another restarted peer', entryOf('b', reported), ['b'], [['c', 60_000]], 'relay'],
  ] as const)('%s', (_name, entry, up, restarted, expected) => {
    const decision = heartbeatDecision(entry, view([...up]), new Map(restarted.map(([id, atMs]) => [id, atMs])));
    expect(decision).toEqual(expected);
  });

  it('allocates nothing: one decision object per takeover reason', () => {
    const down = entryOf('b');
    expect(heartbeatDecision(down, view([]), new Map())).toBe(heartbeatDecision(down, view([]), new Map()));
  });
});

describe('the leases of a register, a renewal, a relay and a takeover', () => {
  it('ownLease: renewed until then, heard until then, shown', () => {
    expect(ownLease(now + lease, 7)).toEqual({
      leaseExpiresAtMs: now + lease, heardUntilMs: now + lease, hidden: false, held: false, ownedSinceMs: 7,
    });
  });

  it.each([
    ['a new instance', undefined, now],
    ['one this peer owns since 10 s', entryOf('self', { ownedSinceMs: 10_000 }), 10_000],
    ['one another peer owned', entryOf('b', { ownedSinceMs: 0 }), now],
  ] as const)('registeredLease of %s: owned since %i', (_name, current, ownedSinceMs) => {
    expect(registeredLease(current, 'self', now, lease)).toEqual(ownLease(now + lease, ownedSinceMs));
  });

  it.each([
    // local lease before -> after a relay until now + lease
    ['a shorter local lease is moved on', now + 1_000, now + lease],
    ['a longer one (a grace) is kept', now + 2 * lease, now + 2 * lease],
  ])('relayedLease: %s', (_name, leaseExpiresAtMs, after) => {
    expect(relayedLease(entryOf('b', { leaseExpiresAtMs }), now + lease)).toEqual({ heardUntilMs: now + lease, leaseExpiresAtMs: after });
  });

  it.each([
    // heard until before -> after a takeover until now + lease
    ['never heard here', 0, now + lease],
    ['heard for longer (an eviction reasserted)', now + 2 * lease, now + 2 * lease],
  ])('takenOverLease, %s: owned from now, heard until the longer', (_name, heardUntilMs, heardAfter) => {
    expect(takenOverLease(entryOf('b', { heardUntilMs, leaseExpiresAtMs: 5, hidden: true, held: true }), now + lease, now)).toEqual({
      leaseExpiresAtMs: now + lease, heardUntilMs: heardAfter, hidden: false, held: false, ownedSinceMs: now,
    });
  });
});

describe('takesOverAtExpiry: the answer to an owner asking before it evicts', () => {
  const asked = entryOf('b', { heardUntilMs: now + 1 });
  const version = asked.record.version;
  it.each([
    ['the asker owns it, same version, heard here within its lease', asked, 'b', version, true],
    ['heard here until just now (the lease ran out here too)', entryOf('b', { heardUntilMs: now }), 'b', version, false],
    ['never heard here', entryOf('b', { heardUntilMs: 0 }), 'b', version, false],
    ['another peer owns it here', entryOf('c', { heardUntilMs: now + 1 }), 'b', version, false],
    ['the asker holds another version (a change not here yet)', asked, 'b', '1-0-b', false],
    ['a tombstone here', stored(record({ peerId: 'b', wallMs: 50_000, deleted: 'cancel' }), { heardUntilMs: now + 1 }), 'b', version, false],
  ] as const)('%s: %s', (_name, entry, askingOwner, atVersion, expected) => {
    expect(takesOverAtExpiry(entry, askingOwner, atVersion, now)).toBe(expected);
  });
});

describe('the owner-down grace', () => {
  it.each([
    // lease, configured grace -> grace
    [30_000, 0, 30_000],
    [30_000, 90_000, 90_000],
    [120_000, 90_000, 120_000],
  ])('a lease of %i ms with ownerDownGraceMs %i -> %i ms', (leaseDurationMs, configuredMs, graceMs) => {
    expect(ownerDownGraceMs(record({ leaseDurationMs }), configuredMs)).toBe(graceMs);
  });

  it.each([
    // lease until, heard until, configured grace -> served until
    ['one grace from now', now + 1_000, 0, 0, now + lease],
    ['the configured grace, longer than the lease', now + 1_000, 0, 90_000, now + 90_000],
    ['the lease it had, if longer', now + 3 * lease, 0, 0, now + 3 * lease],
    ['what a client here vouched for, if longer', now + 1_000, now + 3 * lease, 0, now + 3 * lease],
  ])('ownerDownLeaseExpiresAtMs: %s', (_name, leaseExpiresAtMs, heardUntilMs, configuredMs, expected) => {
    expect(ownerDownLeaseExpiresAtMs(entryOf('b', { leaseExpiresAtMs, heardUntilMs }), now, configuredMs)).toBe(expected);
  });
});

describe('remoteLease', () => {
  const facts = (up: string[] = ['b', 'c'], heldDown: string[] = [], graceMs = 0) => ({
    nowMs: now, selfId: 'self', liveness: liveness(up, heldDown), ownerDownGraceMs: graceMs,
  });
  const from = (owner: string, deleted: 'cancel' | 'evict' | null = null) => record({ peerId: owner, wallMs: 60_000, leaseDurationMs: lease, deleted });

  it.each([
    // current here, incoming, remaining, facts -> leaseExpiresAtMs, heardUntilMs, ownedSinceMs
    ['a new instance: the lease the sender saw', undefined, from('b'), 20_000, facts(), now + 20_000, 0, 0],
    ['no lease left: none, and nothing revived', undefined, from('b'), 0, facts(), now, 0, 0],
    ['a negative remainder counts as none', undefined, from('b'), -5_000, facts(), now, 0, 0],
    ['what a client here vouched for is kept', entryOf('c', { heardUntilMs: now + lease }), from('b'), 1_000, facts(), now + lease, now + lease, 0],
    ['the same owner keeps the lease it has here (a grace)', entryOf('b', { leaseExpiresAtMs: now + 3 * lease }), from('b'), lease, facts(), now + 3 * lease, 0, 0],
    ['another owner does not', entryOf('c', { leaseExpiresAtMs: now + 3 * lease }), from('b'), lease, facts(), now + lease, 0, 0],
    ['a tombstone here keeps nothing', stored(from('b', 'cancel'), { leaseExpiresAtMs: now + 3 * lease }), from('b'), lease, facts(), now + lease, 0, 0],
    ['a held-down owner gets the grace (seed 8675309)', undefined, from('b'), 1_000, facts(['c'], ['b']), now + lease, 0, 0],
    ['a held-down owner gets the configured grace if longer', undefined, from('b'), 1_000, facts(['c'], ['b'], 90_000), now + 90_000, 0, 0],
    ['a held-down owner gets none for a record sent with no lease', undefined, from('b'), 0, facts(['c'], ['b']), now, 0, 0],
    ['a suspect owner (not held down) gets none', undefined, from('b'), 1_000, facts(['c']), now + 1_000, 0, 0],
    ['our own record coming back is owned from now', undefined, from('self'), 1_000, facts(['c'], ['self']), now + 1_000, 0, now],
    ['our own record, owned here already, keeps when', entryOf('self', { ownedSinceMs: 10_000 }), from('self'), 1_000, facts(), now + 1_000, 0, 10_000],
    ['a foreign record of one we owned is not ours', entryOf('self', { ownedSinceMs: 10_000 }), from('b'), 1_000, facts(), now + 1_000, 0, 0],
  ] as const)('%s', (_name, current, incoming, remainingMs, context, leaseExpiresAtMs, heardUntilMs, ownedSinceMs) => {
    expect(remoteLease(current, incoming, remainingMs, context)).toEqual({
      leaseExpiresAtMs, heardUntilMs, hidden: false, held: false, ownedSinceMs,
    });
  });

  it('a tombstone has no lease, whatever was here', () => {
    const current = entryOf('b', { leaseExpiresAtMs: now + lease, heardUntilMs: now + lease });
    expect(remoteLease(current, from('b', 'evict'), lease, facts(['c'], ['b']))).toEqual(NO_LEASE);
  });
});

describe('restoredLease', () => {
  it.each([
    // owner -> owned since
    ['an instance this peer owned: owned again from the restart', 'self', now],
    ['another peer\'s instance', 'b', 0],
  ])('%s', (_name, owner, ownedSinceMs) => {
    expect(restoredLease(record({ peerId: owner, leaseDurationMs: lease }), now, 'self')).toEqual({
      leaseExpiresAtMs: now + lease, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs,
    });
  });

  it('a tombstone has no lease', () => {
    expect(restoredLease(record({ deleted: 'cancel' }), now, 'self')).toEqual(NO_LEASE);
  });
});
