import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DiscoveryCache } from '../../../src/client/cache.js';
import { silentClientLogger } from '../../../src/client/logger.js';
import { Subscribers } from '../../../src/client/subscribers.js';
import type { Instance, InstanceStatus } from '../../../src/client/types.js';
import { FakeClock, settle } from '../../support/fake-clock.js';
import { fakeInstance } from '../../support/fake-http.js';

type Write = { id: number; op: 'register' | 'cancel' | InstanceStatus };

/**
 * One step of a history: a burst of writes (one delta), a reconnection (a new snapshot, after
 * writes made while no stream ran, which the client only learns from that snapshot), or a new
 * subscriber.
 */
type Step = { kind: 'burst'; writes: Write[] } | { kind: 'reconnect'; writes: Write[] } | { kind: 'subscribe' };

const writesArb = (minLength: number) =>
  fc.array(
    fc.record({ id: fc.integer({ min: 0, max: 7 }), op: fc.constantFrom('register', 'cancel', 'UP', 'DOWN', 'OUT_OF_SERVICE', 'STARTING') as fc.Arbitrary<Write['op']> }),
    { minLength, maxLength: 12 },
  );

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: writesArb(1).map((writes) => ({ kind: 'burst' as const, writes })) },
  { weight: 2, arbitrary: writesArb(0).map((writes) => ({ kind: 'reconnect' as const, writes })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'subscribe' as const }) },
);

interface Watcher {
  /** What the callbacks say is up now. */
  up: Set<string>;
  changes: number;
  violations: string[];
}

/**
 * Drives the cache and the subscribers the way a watch stream does (a delta per burst, as the
 * peer's coalescing sends it; a snapshot from another peer on every reconnection) and checks
 * after every event that each subscriber heard each transition once, in order, never a down
 * for an instance that is up, and holds exactly the instances that are UP.
 */
async function runHistory(steps: Step[]): Promise<void> {
  const clock = new FakeClock(0);
  const cache = new DiscoveryCache({ clock, logger: silentClientLogger }, { staleAfterMs: 5_000 });
  const subscribers = new Subscribers(cache, silentClientLogger);
  /** The truth on the peers: listed instances. */
  const truth = new Map<string, Instance>();
  /** What the current stream told (its peer's sent state), to build deltas as the peer does. */
  let told = new Map<string, string>();
  let version = 0;
  let revision = 0;
  let peer = 0;
  const watchers: Watcher[] = [];
  const available = () => new Set([...truth.values()].filter((i) => i.status === 'UP').map((i) => i.instanceId));

  const subscribe = () => {
    const watcher: Watcher = { up: new Set(), changes: 0, violations: [] };
    watchers.push(watcher);
    subscribers.add('orders', {
      onUp: (i) => {
        if (watcher.up.has(i.instanceId)) watcher.violations.push(`up twice: ${i.instanceId}`);
        if (!available().has(i.instanceId)) watcher.violations.push(`up but not UP: ${i.instanceId}`);
        watcher.up.add(i.instanceId);
      },
      onDown: (i) => {
        if (!watcher.up.has(i.instanceId)) watcher.violations.push(`down without up: ${i.instanceId}`);
        if (available().has(i.instanceId)) watcher.violations.push(`down but UP: ${i.instanceId}`);
        watcher.up.delete(i.instanceId);
      },
      onChange: (update) => {
        watcher.changes += 1;
        const listed = update.instances.map((i) => i.instanceId).join(',');
        if (listed !== [...watcher.up].sort().join(',')) watcher.violations.push(`onChange list ${listed} differs from the ups`);
      },
    });
  };
  const check = (what: string) => {
    const expected = [...available()].sort();
    for (const [n, watcher] of watchers.entries()) {
      expect(watcher.violations, `subscriber ${n} after ${what}`).toEqual([]);
      expect([...watcher.up].sort(), `subscriber ${n} after ${what}`).toEqual(expected);
    }
  };
  const write = (writes: Write[]) => {
    for (const w of writes) {
      const id = `i${w.id}`;
      const before = truth.get(id);
      version += 1;
      const v = String(version).padStart(12, '0');
      if (w.op === 'cancel') truth.delete(id);
      else if (w.op === 'register') truth.set(id, fakeInstance(id, { status: before?.status ?? 'UP', version: v }));
      else if (before) truth.set(id, { ...before, status: w.op, version: v });
    }
  };
  const connect = () => {
    peer += 1;
    cache.connected(`http://peer-${peer}`);
    revision = peer * 1_000; // revisions are per peer
    told = new Map([...truth.values()].map((i) => [i.instanceId, i.version]));
    cache.applySnapshot(`http://peer-${peer}`, { type: 'snapshot', service: 'orders', revision, instances: [...truth.values()] });
  };

  subscribe();
  connect();
  await settle();
  check('the first snapshot');
  for (const [index, step] of steps.entries()) {
    if (step.kind === 'subscribe') {
      subscribe();
      await settle();
    } else if (step.kind === 'reconnect') {
      const upBefore = watchers.map((w) => [...w.up].sort());
      cache.disconnected();
      write(step.writes);
      // Nothing is reported while no stream runs, whatever happens meanwhile.
      expect(watchers.map((w) => [...w.up].sort()), `disconnect ${index}`).toEqual(upBefore);
      connect();
    } else {
      write(step.writes);
      // What the peer's coalescing sends: one delta with the difference from what it told.
      const added: Instance[] = [];
      const changed: Instance[] = [];
      const removed: string[] = [];
      for (const [id, instance] of truth) {
        if (!told.has(id)) added.push(instance);
        else if (told.get(id) !== instance.version) changed.push(instance);
      }
      for (const id of told.keys()) if (!truth.has(id)) removed.push(id);
      told = new Map([...truth.values()].map((i) => [i.instanceId, i.version]));
      if (added.length + changed.length + removed.length > 0) {
        revision += 1;
        const changesBefore = watchers.map((w) => w.changes);
        cache.applyDelta(`http://peer-${peer}`, { type: 'delta', service: 'orders', revision, added, changed, removed });
        // Coalesced: at most one onChange per subscriber for the whole burst.
        for (const [n, watcher] of watchers.entries()) expect(watcher.changes - changesBefore[n]!).toBeLessThanOrEqual(1);
      }
    }
    check(`step ${index} (${step.kind})`);
  }
}

describe('subscribe semantics (property)', () => {
  it('every transition reaches every subscriber once, in order, with no down for an UP instance, through bursts and reconnections', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (steps) => runHistory(steps)),
      { numRuns: 200 },
    );
  });
});
