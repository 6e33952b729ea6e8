import { describe, expect, it } from 'vitest';
import type { Logger } from '../../../src/log/logger.js';
import { listService } from '../../../src/registry/queries.js';
import type { RegistrationInput } from '../../../src/registry/validate.js';
import { createTestNode } from '../../support/node.js';

function input(service: string, instanceId: string): RegistrationInput {
  return {
    namespace: 'default',
    service,
    instanceId,
    data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
    leaseDurationMs: 30_000,
  };
}

function recordingLogger(lines: { level: string; message: string }[]): Logger {
  const make = (level: string) => (first: unknown, second?: string) =>
    lines.push({ level, message: typeof first === 'string' ? first : (second ?? '') });
  const logger: Logger = { debug: make('debug'), info: make('info'), warn: make('warn'), error: make('error'), child: () => logger };
  return logger;
}

/** One peer with `services` x `perService` instances whose clients heartbeat every 10 s on their own phase. */
async function fleetNode(services: number, perService: number, file: Record<string, unknown> = {}) {
  const setup = await createTestNode({ file });
  const ids: [string, string][] = [];
  for (let s = 0; s < services; s++) for (let i = 0; i < perService; i++) ids.push([`svc-${s}`, `i-${s}-${i}`]);
  const alive = new Set(ids.map(([, id]) => id));
  const phase = new Map(ids.map(([, id], n) => [id, (n * 997) % 10_000]));
  const beat = async (durationMs: number) => {
    for (let t = 0; t < durationMs; t += 100) {
      const nowMs = setup.clock.nowMs();
      for (const [service, id] of ids) {
        if (alive.has(id) && (nowMs + phase.get(id)!) % 10_000 < 100) {
          try {
            setup.node.registry.heartbeat(input(service, id));
          } catch {
            setup.node.registry.register(input(service, id));
          }
        }
      }
      await setup.clock.advance(100);
    }
  };
  return { ...setup, ids, alive, beat };
}

describe('eviction safety on one peer', () => {
  it('does not trip while a mass of clients registers after start, nor when many cancel', async () => {
    const { node, ids, alive, beat } = await fleetNode(20, 10);
    await beat(70_000);
    for (const [service, id] of ids) node.registry.register(input(service, id));
    await beat(90_000);
    expect(node.safety.status(node.components.clock.nowMs()).selfPreservation.active).toBe(false);
    for (const [service, id] of ids.slice(0, 100)) {
      node.registry.cancel(input(service, id));
      alive.delete(id);
    }
    await beat(5_000);
    const status = node.safety.status(node.components.clock.nowMs()).selfPreservation;
    expect(status.ownedInstances).toBe(100);
    expect(status.expectedRenewalsInWindow).toBeLessThanOrEqual(600);
    expect(status.active).toBe(false);
  });

  it('does not trip on 2,000 registrations that never heartbeat, which are evicted when their leases end; a real drop still trips it', async () => {
    // The per-service cap would pace the evictions of these services: off, to see self-preservation alone.
    const { node, clock, ids, alive, beat } = await fleetNode(20, 5, { cluster: { serviceEvictionMaxRatio: 1 } });
    await beat(70_000); // past the warm-up, 100 instances heartbeating
    const quiet = Array.from({ length: 2_000 }, (_, i) => input(`scratch-${i % 20}`, `q-${i}`));
    for (const registration of quiet) node.registry.register(registration);
    let held = 0;
    for (let t = 0; t < 180_000; t += 10_000) {
      await beat(10_000);
      const status = node.safety.status(clock.nowMs());
      expect(status.selfPreservation.active).toBe(false);
      expect(status.selfPreservation.ownedInstances).toBe(100);
      held += status.held.selfPreservation;
    }
    expect(held).toBe(0);
    expect(quiet.filter((registration) => node.registry.find(registration) !== undefined)).toEqual([]);
    // The heartbeating instances all fall silent at once: that is still a partition's signature.
    for (const [, id] of ids) alive.delete(id);
    await beat(40_000);
    const status = node.safety.status(clock.nowMs()).selfPreservation;
    expect(status.active).toBe(true);
    expect(status.reason).toContain('from 100 instances that were heartbeating): probably a network problem');
  });

  it('never trips during the warm-up after start', async () => {
    const { node, ids, alive, beat } = await fleetNode(10, 10);
    await beat(20_000);
    for (const [, id] of ids) alive.delete(id);
    await beat(35_000);
    expect(node.safety.status(node.components.clock.nowMs()).selfPreservation).toMatchObject({ active: false, reason: 'warming up after start' });
  });

  it('evicts at most the per-run share of the registry in one run, across services, in random order', async () => {
    const { node, clock } = await createTestNode({ file: { cluster: { renewalThresholdRatio: 0, serviceEvictionMaxRatio: 1 } } });
    await clock.advance(70_000);
    const all: [string, string][] = [];
    for (let s = 0; s < 20; s++) for (let i = 0; i < 5; i++) all.push([`svc-${s}`, `i-${s}-${i}`]);
    for (const [service, id] of all) node.registry.register(input(service, id));
    // Half the services die at once (all their leases run out together); the rest heartbeat.
    const survivors = all.filter(([service]) => Number(service.slice(4)) >= 10);
    const byRun = new Map<number, Set<string>>();
    const counts = new Map<number, number>();
    node.store.onChange((change) => {
      if (change.entry.record.deleted !== 'evict') return;
      const atMs = clock.nowMs();
      counts.set(atMs, (counts.get(atMs) ?? 0) + 1);
      byRun.set(atMs, (byRun.get(atMs) ?? new Set()).add(change.entry.record.service));
    });
    for (let t = 0; t < 60_000; t += 10_000) {
      for (const [service, id] of survivors) node.registry.heartbeat(input(service, id));
      await clock.advance(10_000);
    }
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(50);
    // 10% of the served registry a run: 10 of 100, then fewer as it shrinks; never all at once.
    expect(Math.max(...counts.values())).toBe(10);
    expect(counts.size).toBeGreaterThanOrEqual(5);
    expect(byRun.values().next().value!.size).toBeGreaterThan(3);
  });

  it('logs entering and leaving self-preservation once each, and an operator can switch it off', async () => {
    const lines: { level: string; message: string }[] = [];
    const setup = await createTestNode({ start: false });
    const { RegistryNode } = await import('../../../src/node.js');
    const node = new RegistryNode({ ...setup.node.components, logger: recordingLogger(lines) }, setup.node.config);
    await node.start();
    const clock = setup.clock;
    const ids = Array.from({ length: 20 }, (_, i) => `i-${i}`);
    const beat = async (ms: number, which: string[]) => {
      for (let t = 0; t < ms; t += 1_000) {
        if ((clock.nowMs() / 1_000) % 10 === 0) for (const id of which) node.registry.heartbeat(input('svc', id));
        await clock.advance(1_000);
      }
    };
    for (const id of ids) node.registry.register(input('svc', id));
    await beat(90_000, ids);
    await beat(40_000, []);
    const on = lines.filter((line) => line.message.startsWith('self-preservation ON'));
    expect(on).toHaveLength(1);
    expect(on[0]!.level).toBe('warn');
    expect(node.registry.find(input('svc', 'i-0'))).toBeDefined();
    expect(listService(node.store, 'default', 'svc', node.registry.leaseView(), false).instances).toHaveLength(20);
    await beat(70_000, ids);
    expect(lines.filter((line) => line.message.startsWith('self-preservation OFF'))).toHaveLength(1);
    await beat(40_000, []);
    node.safety.setModes({ selfPreservation: 'off' });
    await clock.advance(2_000);
    expect(node.safety.status(clock.nowMs()).selfPreservation).toMatchObject({ active: false, mode: 'off' });
    // With the guard switched off, the caps still apply: 30% of 20 = 6, then 10% of the served a run.
    expect(listService(node.store, 'default', 'svc', node.registry.leaseView(), false).instances.length).toBeLessThan(20);
    await node.stop();
  });
});
