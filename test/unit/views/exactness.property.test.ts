import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { registryDocument } from '../../../src/eureka/documents.js';
import { PART_MAX_AGE_MS } from '../../../src/eureka/shared-documents.js';
import { toXml } from '../../../src/eureka/xml.js';
import { listService, listServices } from '../../../src/registry/queries.js';
import type { InstanceStatus } from '../../../src/registry/types.js';
import type { InstanceView } from '../../../src/registry/view.js';
import { leaseState } from '../../../src/registry/visibility.js';
import { toWireRecord } from '../../../src/replication/wire.js';
import { DEFAULT_VIEW_MAX_AGE_MS } from '../../../src/views/service-views.js';
import type { WatchEvent } from '../../../src/watch/hub.js';
import { record, stored } from '../../support/records.js';
import { createTestServer, type TestServer } from '../../support/server.js';

/**
 * The read layer is exact: after any sequence of local writes, replicated writes, anti-entropy
 * repairs, evictions, expiries and holds (the reaper runs as the fake clock moves), every
 * encoding a reader can get equals a fresh build from the store, except the documented lag of
 * the lease countdown (`leaseExpiresInMs`: never more than 1 s too long) and of Eureka's
 * informational `lastRenewalTimestamp` (as of at most 30 s ago: never later than the fresh one).
 */

const SERVICES = ['orders', 'billing'] as const;
const IDS = ['i0', 'i1', 'i2', 'i3', 'i4'] as const;
const STATUSES: InstanceStatus[] = ['UP', 'DOWN', 'STARTING', 'OUT_OF_SERVICE'];
const JSON_ACCEPT = { accept: 'application/json' };

type Op =
  | { kind: 'register' | 'heartbeat' | 'cancel'; service: number; id: number; status: number }
  | { kind: 'status'; service: number; id: number; status: number }
  | { kind: 'remote' | 'repair'; service: number; id: number; status: number; deleted: boolean; leaseMs: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'read' };

const key = { service: fc.nat(SERVICES.length - 1), id: fc.nat(IDS.length - 1), status: fc.nat(STATUSES.length - 1) };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('register' as const, 'heartbeat' as const, 'cancel' as const), ...key }),
  fc.record({ kind: fc.constant('status' as const), ...key }),
  fc.record({ kind: fc.constantFrom('remote' as const, 'repair' as const), ...key, deleted: fc.boolean(), leaseMs: fc.integer({ min: 0, max: 40_000 }) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 0, max: 1_500 }), fc.integer({ min: 5_000, max: 45_000 })) }),
  fc.constant({ kind: 'read' as const }),
);

let server: TestServer | undefined;
afterEach(async () => {
  await server?.app.close();
  server = undefined;
});

/** The countdown may be served up to the views' bound too long; otherwise equal. */
function sameUpToCountdown(served: InstanceView[], fresh: InstanceView[]): void {
  expect(served.map((view) => view.instanceId)).toEqual(fresh.map((view) => view.instanceId));
  served.forEach((view, i) => {
    const truth = fresh[i]!;
    expect(view.leaseExpiresInMs).toBeGreaterThanOrEqual(0);
    expect(view.leaseExpiresInMs).toBeLessThanOrEqual(truth.leaseExpiresInMs + DEFAULT_VIEW_MAX_AGE_MS);
    expect({ ...view, leaseExpiresInMs: 0 }).toEqual({ ...truth, leaseExpiresInMs: 0 });
  });
}

/** Eureka documents with `lastRenewalTimestamp` checked against the fresh one, then blanked. */
function sameUpToRenewal(served: string, fresh: string, pattern: RegExp): void {
  const servedStamps = [...served.matchAll(pattern)].map((m) => Number(m[1]));
  const freshStamps = [...fresh.matchAll(pattern)].map((m) => Number(m[1]));
  expect(servedStamps).toHaveLength(freshStamps.length);
  servedStamps.forEach((stamp, i) => expect(stamp).toBeLessThanOrEqual(freshStamps[i]!));
  expect(served.replace(pattern, '~')).toBe(fresh.replace(pattern, '~'));
}

async function checkEveryEncoding(s: TestServer, watchers: Map<string, Map<string, InstanceView>>): Promise<void> {
  const { app, node } = s;
  const leases = node.registry.leaseView();
  for (const service of SERVICES) {
    const fresh = listService(node.store, 'default', service, leases, true, node.config.cluster.protectThresholdRatio);
    const listed = await app.inject({ url: `/v1/services/${service}?status=all` });
    const { instances, ...rest } = listed.json() as { instances: InstanceView[] };
    expect(rest).toEqual({ namespace: fresh.namespace, service: fresh.service, revision: fresh.revision, protected: fresh.protected });
    sameUpToCountdown(instances, fresh.instances);
    const up = await app.inject({ url: `/v1/services/${service}` });
    const freshUp = listService(node.store, 'default', service, leases, false, node.config.cluster.protectThresholdRatio);
    sameUpToCountdown((up.json() as { instances: InstanceView[] }).instances, freshUp.instances);
    // A new subscriber's snapshot.
    const events: WatchEvent[] = [];
    const subscription = node.watch.subscribe({ namespace: 'default', services: [service] }, (event) => (events.push(event), true));
    subscription.close();
    expect(events[0]?.type).toBe('snapshot');
    if (events[0]?.type === 'snapshot') {
      expect(events[0].revision).toBe(fresh.revision);
      sameUpToCountdown(events[0].instances, fresh.instances);
    }
    // A long-lived subscriber, after the coalescing window: it holds every served instance at
    // its version, and nothing else but instances whose lease ran out since the reaper's last
    // run (watchers hear of expiries when the reaper evicts or hides: a store change). A guard
    // that starts holding an expired lease is no store change either: watchers hear of it when
    // the reaper marks the instance held (then a store change), so such instances may be
    // missing until then, and the evictionHeld flag is not compared.
    const held = watchers.get(service) ?? new Map<string, InstanceView>();
    const entries = node.store.getService('default', service)?.instances;
    for (const view of fresh.instances) {
      const markedHeld = entries?.get(view.instanceId)?.held ?? false;
      if (view.evictionHeld && !markedHeld && !held.has(view.instanceId)) continue;
      expect([view.instanceId, held.get(view.instanceId)?.version]).toEqual([view.instanceId, view.version]);
    }
    const notGone = new Set(
      [...(node.store.getService('default', service)?.instances.values() ?? [])]
        .filter((entry) => leaseState(entry, leases) !== 'gone')
        .map((entry) => `${entry.record.instanceId}@${entry.record.version}`),
    );
    for (const view of held.values()) expect(notGone).toContain(`${view.instanceId}@${view.version}`);
  }
  // The services list, with its counts kept per stable view.
  expect((await app.inject({ url: '/v1/services' })).json().services).toEqual(listServices(node.store, 'default', leases));
  for (const group of ['none', 'DEFAULT_GROUP']) expect((await app.inject({ url: `/v1/services?group=${group}` })).json().services).toEqual(listServices(node.store, 'default', leases, group));
  const context = { store: node.store, namespace: 'default', view: leases, defaults: { renewalIntervalSecs: Math.max(1, Math.round(node.config.cluster.heartbeatIntervalMs / 1000)) } };
  const document = registryDocument(context);
  const json = await app.inject({ url: '/eureka/apps', headers: JSON_ACCEPT });
  sameUpToRenewal(json.body, JSON.stringify(document), /"lastRenewalTimestamp":(\d+)/g);
  const xml = await app.inject({ url: '/eureka/apps' });
  sameUpToRenewal(xml.body, toXml(document), /<lastRenewalTimestamp>(\d+)<\/lastRenewalTimestamp>/g);
}

describe('the read layer is exact', () => {
  it('every encoding equals a fresh build from the store, whatever happened (seeded)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
        await server?.app.close();
        server = await createTestServer({ file: { cluster: { selfPreservationMinInstances: 1, selfPreservationWarmUpMs: 0, protectThresholdRatio: 0.5 } } });
        const s = server;
        const { node, clock } = s;
        // Long-lived watchers of each service: snapshot, then deltas applied.
        const watchers = new Map<string, Map<string, InstanceView>>();
        node.watch.subscribe({ namespace: 'default', services: [...SERVICES] }, (event) => {
          if (event.type === 'snapshot') watchers.set(event.service, new Map(event.instances.map((view) => [view.instanceId, view])));
          if (event.type === 'delta') {
            const held = watchers.get(event.service)!;
            for (const view of [...event.added, ...event.changed]) held.set(view.instanceId, view);
            for (const { instanceId } of event.removed) held.delete(instanceId);
          }
          return true;
        });
        let remoteWrites = 0;
        for (const step of ops) {
          if (step.kind === 'advance') {
            await clock.advance(step.ms);
            continue;
          }
          if (step.kind === 'read') {
            await clock.advance(node.config.cluster.watchCoalesceMs);
            await checkEveryEncoding(s, watchers);
            continue;
          }
          const instanceKey = { namespace: 'default', service: SERVICES[step.service]!, instanceId: IDS[step.id]! };
          const status = STATUSES[step.status]!;
          try {
            if (step.kind === 'register') {
              node.registry.register({
                ...instanceKey,
                data: { host: '10.0.0.1', port: 8080, securePort: null, status, weight: 1, zone: '', metadata: { k: String(step.id) } },
                leaseDurationMs: 30_000,
              });
            } else if (step.kind === 'heartbeat') node.registry.heartbeat(instanceKey);
            else if (step.kind === 'cancel') node.registry.cancel(instanceKey);
            else if (step.kind === 'status') node.registry.update(instanceKey, { status });
            else if (step.kind === 'remote' || step.kind === 'repair') {
              remoteWrites += 1;
              const rec = record({
                ...instanceKey,
                instanceId: `r-${IDS[step.id]}`,
                peerId: 'peer-2',
                wallMs: clock.nowMs() + remoteWrites,
                deleted: step.deleted ? 'cancel' : null,
                data: { host: '10.0.0.2', port: 9090, securePort: null, status, weight: 1, zone: '', metadata: {} },
              });
              const wire = toWireRecord(stored(rec, { leaseExpiresAtMs: clock.nowMs() + step.leaseMs }), node.registry.leaseView());
              node.inbox.apply('peer-2', [wire], step.kind === 'remote' ? 'replication' : 'repair');
            }
          } catch {
            // Unknown instance (a heartbeat or status of nothing): the registry refuses; nothing changed.
          }
        }
        await clock.advance(node.config.cluster.watchCoalesceMs);
        await checkEveryEncoding(s, watchers);
        // And once more past every bound: the countdown and the renewal stamps too.
        await clock.advance(PART_MAX_AGE_MS);
        await clock.advance(node.config.cluster.watchCoalesceMs);
        await checkEveryEncoding(s, watchers);
      }),
      { seed: 20261201, numRuns: 40, endOnFailure: true },
    );
  }, 240_000);
});
