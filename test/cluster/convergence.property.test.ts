import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareVersions } from '../../src/clock/hlc.js';
import { instanceKeyString, instanceStatuses, type InstanceRecord } from '../../src/registry/types.js';
import { instance, TestCluster } from '../support/cluster.js';

const KEYS = ['k0', 'k1', 'k2', 'k3'];

type Op =
  | { kind: 'register'; peer: number; key: number; port: number }
  | { kind: 'cancel'; peer: number; key: number }
  | { kind: 'status'; peer: number; key: number; status: number }
  | { kind: 'partition'; split: number }
  | { kind: 'oneWay'; from: number; to: number }
  | { kind: 'heal' }
  | { kind: 'wait'; ms: number };

const op = (size: number): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('register' as const), peer: fc.nat(size - 1), key: fc.nat(KEYS.length - 1), port: fc.integer({ min: 1, max: 65535 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), peer: fc.nat(size - 1), key: fc.nat(KEYS.length - 1) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('status' as const), peer: fc.nat(size - 1), key: fc.nat(KEYS.length - 1), status: fc.nat(3) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('partition' as const), split: fc.integer({ min: 1, max: size - 1 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('oneWay' as const), from: fc.nat(size - 1), to: fc.nat(size - 1) }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'heal' as const }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 8_000 }) }) },
  );

async function runHistory(seed: number, size: number, lossRatio: number, ops: Op[]): Promise<void> {
  const cluster = new TestCluster({ size, seed, cluster: { leaseDurationMs: 600_000 } });
  await cluster.start();
  cluster.network.jitterMs = 30;
  cluster.network.lossRatio = lossRatio;
  // Every write accepted anywhere (client writes, takeovers, evictions): the newest must win.
  const newest = new Map<string, InstanceRecord>();
  for (const node of cluster.nodes.values()) {
    node.store.onChange((change) => {
      if (change.kind !== 'write' || change.origin !== 'local') return;
      const record = change.entry.record;
      const key = instanceKeyString(record);
      const known = newest.get(key);
      if (!known || compareVersions(known.version, record.version) < 0) newest.set(key, record);
    });
  }
  const peer = (index: number) => cluster.node(cluster.ids[index]!).registry;
  for (const step of ops) {
    switch (step.kind) {
      case 'register':
        peer(step.peer).register(instance(KEYS[step.key]!, { leaseDurationMs: 600_000, data: { ...instance('x').data, port: step.port } }));
        break;
      case 'cancel':
        if (peer(step.peer).find(instance(KEYS[step.key]!))) peer(step.peer).cancel(instance(KEYS[step.key]!));
        break;
      case 'status':
        if (peer(step.peer).find(instance(KEYS[step.key]!))) {
          peer(step.peer).update(instance(KEYS[step.key]!), { status: instanceStatuses[step.status]! });
        }
        break;
      case 'partition':
        cluster.network.heal();
        cluster.network.partition(cluster.ids.slice(0, step.split), cluster.ids.slice(step.split));
        break;
      case 'oneWay':
        if (step.from !== step.to) cluster.network.cutOneWay(cluster.ids[step.from]!, cluster.ids[step.to]!);
        break;
      case 'heal':
        cluster.network.heal();
        break;
      case 'wait':
        await cluster.advance(step.ms);
        break;
    }
  }
  cluster.network.heal();
  cluster.network.lossRatio = 0;
  await cluster.clock.advanceUntil(() => cluster.converged(), 120_000, 100);
  for (const node of cluster.nodes.values()) {
    for (const [key, record] of newest) {
      const held = [...node.store.entries()].find((entry) => instanceKeyString(entry.record) === key);
      expect(held?.record, `${node.config.self.id} holds the newest write of ${key}`).toEqual(record);
    }
    expect(node.store.size).toBe(newest.size);
  }
  await cluster.stop();
}

describe('convergence (property)', () => {
  it('after any history of writes, partitions, one-way cuts, loss and reordering, every peer holds the newest write of every key', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 2 ** 30 }),
        fc.constantFrom(0, 0.1, 0.3),
        fc.integer({ min: 2, max: 5 }).chain((size) =>
          fc.tuple(fc.constant(size), fc.array(op(size), { minLength: 5, maxLength: 40 })),
        ),
        async (seed, loss, [size, ops]) => runHistory(seed, size, loss, ops),
      ),
      { numRuns: 100, verbose: 1 }, // the suite's fixed seed (test/support/fast-check-seed.ts)
    );
  });
});
