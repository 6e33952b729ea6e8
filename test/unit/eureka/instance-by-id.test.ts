import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoreReader } from '../../../src/app/reads.js';
import { findLiveByIdInTurns } from '../../../src/eureka/documents.js';
import { isServed, type LeaseView } from '../../../src/registry/visibility.js';
import type { StoredInstance } from '../../../src/registry/types.js';
import { TurnBudget } from '../../../src/eureka/turn-budget.js';
import type { RegistryNode } from '../../../src/node.js';
import { record } from '../../support/records.js';
import { createTestServer, type TestServer } from '../../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

const SERVICES = ['orders', 'billing', 'audit'] as const;
const NAMESPACES = ['default', 'team-a'] as const;
const IDS = ['a', 'b', 'c'] as const;

const reg = (service: string, instanceId: string, namespace = 'default', leaseDurationMs = 30_000) => ({
  namespace,
  service,
  instanceId,
  data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: {} },
  leaseDurationMs,
});

type Op =
  | { kind: 'register' | 'cancel' | 'purge' | 'remote'; service: number; id: number; namespace: number; leaseMs: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'noop' };

const key = { service: fc.nat(SERVICES.length - 1), id: fc.nat(IDS.length - 1), namespace: fc.nat(NAMESPACES.length - 1), leaseMs: fc.integer({ min: 1_000, max: 40_000 }) };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom('register' as const, 'cancel' as const, 'purge' as const, 'remote' as const), ...key }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 45_000 }) }) },
);

function apply(node: RegistryNode, step: Exclude<Op, { kind: 'advance' | 'noop' }>, nowMs: number): void {
  const instance = { namespace: NAMESPACES[step.namespace]!, service: SERVICES[step.service]!, instanceId: IDS[step.id]! };
  if (step.kind === 'register') node.registry.register(reg(instance.service, instance.instanceId, instance.namespace, step.leaseMs));
  else if (step.kind === 'cancel') {
    if (node.registry.find(instance)) node.registry.cancel(instance);
  }
  else if (step.kind === 'purge') node.store.purge(instance);
  // Another peer's write: the record of an owner this peer does not know.
  else node.registry.applyRemote(record({ ...instance, peerId: 'other', wallMs: nowMs + 1, leaseDurationMs: step.leaseMs }), step.leaseMs);
}

/** The first served instance with this id in the namespace's services, in one pass: the reference. */
function findLiveById(store: Pick<StoreReader, 'servicesIn'>, namespace: string, id: string, view: LeaseView): StoredInstance | undefined {
  for (const entries of store.servicesIn(namespace)) {
    const entry = entries.instances.get(id);
    if (entry && isServed(entry, view)) return entry;
  }
  return undefined;
}

/** A budget of `units` a turn whose yields are counted, not waited for. */
function countingBudget(units: number) {
  const counted = { yields: 0 };
  const budget = new TurnBudget({ yieldTurn: async () => void (counted.yields += 1), elapsedMs: () => 0 }, { turnUnits: units, turnMaxMs: Number.POSITIVE_INFINITY });
  return { budget, counted };
}

describe('GET /eureka/instances/{id}: a walk over the services in turns', () => {
  it('answers as the walk in one piece after any writes, cancels, purges, remote writes and expiries', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), fc.integer({ min: 1, max: 3 }), async (ops, units) => {
        server = await createTestServer();
        const { node, clock } = server;
        const check = async () => {
          const view = node.registry.leaseView();
          for (const id of [...IDS, 'unknown']) {
            const walked = findLiveById(node.store, 'default', id, view);
            expect(await findLiveByIdInTurns(node.store, 'default', id, () => view, countingBudget(units).budget), id).toBe(walked);
          }
        };
        for (const step of ops) {
          if (step.kind === 'advance') await clock.advance(step.ms);
          else if (step.kind !== 'noop') apply(node, step, clock.nowMs());
          await check();
        }
        await server.app.close();
        server = undefined;
      }),
      { numRuns: 60 },
    );
  });

  it('answers, of two services serving an id, the one the store created first; one created again after its purge comes last', async () => {
    server = await createTestServer();
    const { node } = server;
    node.registry.register(reg('billing', 'other'));
    node.registry.register(reg('orders', 'x'));
    node.registry.register(reg('billing', 'x'));
    const found = async () => (await findLiveByIdInTurns(node.store, 'default', 'x', () => node.registry.leaseView(), countingBudget(1).budget))?.record.service;
    expect(await found()).toBe('billing');
    // Billing's records purged: the store no longer holds it; registered again, it comes after orders.
    for (const id of ['other', 'x']) node.store.purge({ namespace: 'default', service: 'billing', instanceId: id });
    expect(node.store.getService('default', 'billing')).toBeUndefined();
    expect(await found()).toBe('orders');
    node.registry.register(reg('Billing', 'x'));
    expect(await found()).toBe('orders');
    node.registry.cancel({ namespace: 'default', service: 'orders', instanceId: 'x' });
    expect(await found()).toBe('Billing');
  });

  it('yields once a turn\'s services are looked at, and looks only at the namespace asked', async () => {
    server = await createTestServer();
    const { node } = server;
    for (let i = 0; i < 100; i++) node.registry.register(reg(`svc-${i}`, `i-${i}`));
    for (let i = 0; i < 50; i++) node.registry.register(reg(`svc-${i}`, `i-${i}`, 'team-a'));
    const { budget, counted } = countingBudget(10);
    expect((await findLiveByIdInTurns(node.store, 'default', 'unknown', () => node.registry.leaseView(), budget))).toBeUndefined();
    expect(counted.yields).toBe(10);
    const last = countingBudget(10);
    expect((await findLiveByIdInTurns(node.store, 'default', 'i-99', () => node.registry.leaseView(), last.budget))?.record.service).toBe('svc-99');
    expect(last.counted.yields).toBe(9);
  });

  it('serves GET /eureka/instances/{id} through the walk', async () => {
    server = await createTestServer();
    const { app, node } = server;
    for (let i = 0; i < 100; i++) node.registry.register(reg(`svc-${i}`, `i-${i}`));
    const found = await app.inject({ url: '/eureka/instances/i-99', headers: { accept: 'application/json' } });
    expect(found.json().instance.app).toBe('SVC-99');
    expect((await app.inject({ url: '/eureka/instances/unknown' })).statusCode).toBe(404);
  });
});
