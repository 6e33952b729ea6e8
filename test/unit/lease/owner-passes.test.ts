import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HybridClock } from '../../../src/clock/hlc.js';
import { LeaseRule, type MembershipView } from '../../../src/lease/lease-scan.js';
import { OWNERSHIP_RULES } from '../../../src/lease/ownership.js';
import { Registry } from '../../../src/registry/registry.js';
import { InstanceStore, type StoreChange } from '../../../src/registry/store.js';
import type { StoredInstance } from '../../../src/registry/types.js';
import { isServed } from '../../../src/registry/visibility.js';
import { FakeClock } from '../../support/fake-clock.js';
import { record } from '../../support/records.js';
import { recordingLogger, type LogLine } from '../../support/recording-logger.js';
import { SteppedClock } from '../../support/stepped-clock.js';

/**
 * An owner going down or coming back, in turns (src/registry/owner-passes.ts): the registry
 * under test gets a clock whose timers the test fires one by one, so that what readers, the
 * reaper and writes see between two turns can be asserted.
 */

const GRACE_MS = 60_000;
const LEASE_MS = 30_000;

/** Membership the test sets: who is down, and since when. */
class TestMembership implements MembershipView {
  readonly downSince = new Map<string, number>();
  isUp(peerId: string): boolean {
    return !this.downSince.has(peerId);
  }
  heldDown(peerId: string): boolean {
    return this.downSince.has(peerId);
  }
  downSinceMs(peerId: string): number | null {
    return this.downSince.get(peerId) ?? null;
  }
  livePeerIds(): string[] {
    return ['peer-a', 'peer-b', 'peer-c'].filter((id) => this.isUp(id));
  }
}

/**
 * A registry on peer-a holding, in the store's order, `alpha` (2 instances of peer-b), `beta`
 * (6 of peer-b, 2 of peer-c) and `gamma` (2 of peer-b): 10 of peer-b's. Their leases, as the
 * sender saw them, ran out long ago: while their owner is up, that does not matter.
 */
function harness(sliceEntries: number, shared: { fake: FakeClock; membership: TestMembership } = { fake: new FakeClock(), membership: new TestMembership() }) {
  const { fake, membership } = shared;
  const clock = new SteppedClock(fake);
  const lines: LogLine[] = [];
  const store = new InstanceStore(16);
  const registry = new Registry(
    { clock, hlc: new HybridClock(clock, 'peer-a'), store, liveness: membership, logger: recordingLogger(lines), ownership: OWNERSHIP_RULES },
    { peerId: 'peer-a', tombstoneTtlMs: 600_000, ownerDownGraceMs: GRACE_MS, ownerPassSliceEntries: sliceEntries },
  );
  const put = (service: string, instanceId: string, owner: string, leaseRemainingMs = LEASE_MS) =>
    registry.applyRemote(record({ service, instanceId, peerId: owner, wallMs: fake.nowMs(), leaseDurationMs: LEASE_MS }), leaseRemainingMs);
  for (let i = 0; i < 2; i++) put('alpha', `a-${i}`, 'peer-b');
  for (let i = 0; i < 6; i++) put('beta', `b-${i}`, 'peer-b');
  for (let i = 0; i < 2; i++) put('beta', `c-${i}`, 'peer-c');
  for (let i = 0; i < 2; i++) put('gamma', `g-${i}`, 'peer-b');
  fake.jump(10 * LEASE_MS);
  const changes: StoreChange[] = [];
  store.onChange((change) => changes.push(change));
  const ofOwner = (owner: string): StoredInstance[] => [...store.entries()].filter((entry) => entry.record.owner === owner);
  const served = (entries: StoredInstance[]) => entries.map((entry) => isServed(entry, registry.leaseView()));
  /** The reaper's rule, asked now, with the registry's pass in view as the reaper asks it. */
  const rule = () =>
    new LeaseRule({
      nowMs: fake.nowMs(),
      selfId: 'peer-a',
      membership,
      graceUnderway: (owner) => registry.graceUnderway(owner),
      tombstoneTtlMs: 600_000,
      orphanTimeoutMs: 3_600_000,
      renewalWindowMs: 60_000,
      heartbeatIntervalMs: 10_000,
    });
  const goDown = (owner: string) => {
    membership.downSince.set(owner, fake.nowMs());
    registry.ownerDown(owner);
  };
  const comeBack = (owner: string) => {
    membership.downSince.delete(owner);
    registry.ownerUp(owner);
  };
  return { fake, clock, store, registry, lines, changes, put, ofOwner, served, rule, goDown, comeBack };
}

const graceWarnings = (lines: LogLine[]) => lines.filter((line) => line.msg === 'owner down: its instances get one grace period');

describe('an owner going down, in turns', () => {
  it('gives every instance of the owner its grace over turns of sliceEntries, serving each of them all along and hiding none before it is done', () => {
    const h = harness(3);
    const startMs = h.fake.nowMs();
    const peerB = h.ofOwner('peer-b');
    const peerC = h.ofOwner('peer-c').map((entry) => entry.leaseExpiresAtMs);
    h.goDown('peer-b');
    expect(h.registry.graceUnderway('peer-b')).toBe(true);
    let turns = 1;
    for (;;) {
      // Between turns: some have their grace, the others not yet; every one is served, and the
      // reaper's rule takes none of them for hidden.
      expect(h.served(h.ofOwner('peer-b'))).toEqual(peerB.map(() => true));
      expect(h.ofOwner('peer-b').map((entry) => h.rule().bucketOf(entry))).toEqual(peerB.map(() => null));
      if (!h.clock.runSlice()) break;
      turns += 1;
    }
    // 12 entries in turns of 3: 4 turns, and one more that finds the end.
    expect(turns).toBe(5);
    expect(h.registry.graceUnderway('peer-b')).toBe(false);
    expect(h.ofOwner('peer-b').map((entry) => entry.leaseExpiresAtMs)).toEqual(peerB.map(() => startMs + GRACE_MS));
    expect(h.ofOwner('peer-c').map((entry) => entry.leaseExpiresAtMs)).toEqual(peerC);
    expect(h.changes).toEqual([]);
    expect(graceWarnings(h.lines).map((line) => line.fields)).toEqual([{ component: 'registry', owner: 'peer-b', instances: 10 }]);
    // Once the grace has run out, the owner is down to readers and the reaper alike.
    h.fake.jump(GRACE_MS);
    expect(h.served(h.ofOwner('peer-b'))).toEqual(peerB.map(() => false));
    expect(h.ofOwner('peer-b').map((entry) => h.rule().bucketOf(entry))).toEqual(peerB.map(() => 'expiredForeign'));
  });

  it('is done in the same turn when the store fits in one', () => {
    const h = harness(1_000);
    h.goDown('peer-b');
    expect(h.registry.graceUnderway('peer-b')).toBe(false);
    expect(h.clock.pending).toBe(0);
    expect(h.ofOwner('peer-b').every((entry) => entry.leaseExpiresAtMs === h.fake.nowMs() + GRACE_MS)).toBe(true);
  });

  it('gives the same grace to an instance of the owner written behind the pass, new or replaced', () => {
    const h = harness(3);
    const startMs = h.fake.nowMs();
    h.goDown('peer-b');
    // The first turn went through alpha (2) and into beta: a key added to alpha now is behind it.
    h.fake.jump(5);
    h.put('alpha', 'a-new', 'peer-b', 1_000);
    h.put('alpha', 'a-0', 'peer-b', 1_000);
    h.clock.runAll();
    const lease = (instanceId: string) => h.store.get({ namespace: 'default', service: 'alpha', instanceId })!.leaseExpiresAtMs;
    expect(lease('a-new')).toBe(startMs + 5 + GRACE_MS);
    expect(lease('a-0')).toBe(startMs + 5 + GRACE_MS);
  });

  it('stops when the owner comes back before it is done; the rest keep their leases and nothing is logged', () => {
    const h = harness(3);
    const before = h.ofOwner('peer-b').map((entry) => entry.leaseExpiresAtMs);
    h.goDown('peer-b');
    h.comeBack('peer-b');
    expect(h.registry.graceUnderway('peer-b')).toBe(false);
    h.clock.runAll(); // the up pass's turns (nothing hidden to show); the down pass's are gone
    const after = h.ofOwner('peer-b').map((entry) => entry.leaseExpiresAtMs);
    // The first turn's three had their grace; the other seven were not touched.
    expect(after.filter((ms, i) => ms !== before[i])).toHaveLength(3);
    expect(graceWarnings(h.lines)).toEqual([]);
  });

  it('runs to its end at once when the peer stops', () => {
    const h = harness(3);
    h.goDown('peer-b');
    h.registry.finishOwnerPasses();
    expect(h.registry.graceUnderway('peer-b')).toBe(false);
    expect(h.clock.runAll()).toBe(0);
    expect(h.ofOwner('peer-b').every((entry) => entry.leaseExpiresAtMs === h.fake.nowMs() + GRACE_MS)).toBe(true);
    expect(graceWarnings(h.lines)).toHaveLength(1);
  });
});

describe('an owner coming back, in turns', () => {
  /** Every instance of peer-b hidden, as the reaper leaves them once their grace ran out. */
  function hiddenHarness() {
    const h = harness(3);
    for (const entry of h.ofOwner('peer-b')) h.registry.hide(entry);
    h.changes.length = 0;
    return h;
  }

  it('shows again what was hidden for its sake, one change each, over turns', () => {
    const h = hiddenHarness();
    h.comeBack('peer-b');
    expect(h.ofOwner('peer-b').filter((entry) => entry.hidden)).toHaveLength(7);
    h.clock.runAll();
    expect(h.ofOwner('peer-b').filter((entry) => entry.hidden)).toEqual([]);
    expect(h.served(h.ofOwner('peer-b'))).toEqual(h.ofOwner('peer-b').map(() => true));
    expect(h.changes.map((change) => change.kind)).toEqual(Array<string>(10).fill('local'));
  });

  it('still shows all of it, with their grace, when the owner goes down again before it is done (as both passes run whole would)', () => {
    const h = hiddenHarness();
    h.comeBack('peer-b');
    h.fake.jump(5);
    const downMs = h.fake.nowMs();
    h.goDown('peer-b');
    h.clock.runAll();
    expect(h.ofOwner('peer-b').filter((entry) => entry.hidden)).toEqual([]);
    expect(h.ofOwner('peer-b').every((entry) => entry.leaseExpiresAtMs === downMs + GRACE_MS)).toBe(true);
    expect(h.served(h.ofOwner('peer-b'))).toEqual(h.ofOwner('peer-b').map(() => true));
    // Each shown once: three by the up pass, seven by the down pass that cut it short.
    expect(h.changes).toHaveLength(10);
  });
});

describe('owner passes in turns, against whole ones', () => {
  it('leave every instance served as whole passes would, with the same grace for a down owner, whatever is written between turns (property, seeded)', () => {
    type Op =
      | { kind: 'put'; namespace: number; service: number; id: number; owner: number; leaseMs: number; deleted: boolean }
      | { kind: 'advance'; ms: number }
      | { kind: 'down' | 'up'; owner: number }
      | { kind: 'turn' | 'check' };
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('put' as const),
          namespace: fc.nat(1),
          service: fc.nat(4),
          id: fc.nat(5),
          owner: fc.nat(1),
          leaseMs: fc.integer({ min: 0, max: LEASE_MS }),
          deleted: fc.boolean(),
        }),
      },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 2_000 }) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('down' as const, 'up' as const), owner: fc.nat(1) }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom('turn' as const, 'check' as const) }) },
    );
    const NAMESPACES = ['default', 'team-a'];
    const SERVICES = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    const OWNERS = ['peer-b', 'peer-c'];

    fc.assert(
      fc.property(fc.array(op, { minLength: 10, maxLength: 80 }), fc.integer({ min: 1, max: 5 }), (ops, sliceEntries) => {
        const shared = { fake: new FakeClock(), membership: new TestMembership() };
        const inTurns = harness(sliceEntries, shared);
        const whole = harness(1_000_000, shared);
        let counter = 0;
        /** Every key both hold: served alike, and a down owner's instances with the same lease. */
        const compare = () => {
          inTurns.clock.runAll();
          expect(inTurns.registry.graceUnderway('peer-b') || inTurns.registry.graceUnderway('peer-c')).toBe(false);
          const seen = (h: ReturnType<typeof harness>) =>
            [...h.store.entries()].map((entry) => {
              const { namespace, service, instanceId, owner, deleted } = entry.record;
              const down = shared.membership.downSince.has(owner);
              return [`${namespace}/${service}/${instanceId}`, owner, deleted, isServed(entry, h.registry.leaseView()), entry.hidden, down ? entry.leaseExpiresAtMs : null];
            });
          expect(seen(inTurns)).toEqual(seen(whole));
        };
        for (const step of ops) {
          if (step.kind === 'put') {
            const rec = record({
              namespace: NAMESPACES[step.namespace]!,
              service: SERVICES[step.service]!,
              instanceId: `i-${step.id}`,
              peerId: OWNERS[step.owner]!,
              wallMs: shared.fake.nowMs(),
              counter: counter++,
              leaseDurationMs: LEASE_MS,
            });
            const written = step.deleted ? { ...rec, deleted: 'cancel' as const } : rec;
            for (const h of [inTurns, whole]) h.registry.applyRemote(written, step.leaseMs);
          } else if (step.kind === 'advance') shared.fake.jump(step.ms);
          else if (step.kind === 'down') {
            const owner = OWNERS[step.owner]!;
            if (shared.membership.downSince.has(owner)) continue;
            shared.membership.downSince.set(owner, shared.fake.nowMs());
            for (const h of [inTurns, whole]) h.registry.ownerDown(owner);
          } else if (step.kind === 'up') {
            const owner = OWNERS[step.owner]!;
            if (!shared.membership.downSince.has(owner)) continue;
            shared.membership.downSince.delete(owner);
            for (const h of [inTurns, whole]) h.registry.ownerUp(owner);
          } else if (step.kind === 'turn') inTurns.clock.runSlice();
          else compare();
        }
        compare();
      }),
      { numRuns: 200, seed: 20261206 },
    );
  });
});
