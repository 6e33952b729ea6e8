import { describe, expect, it } from 'vitest';
import { BlockingQueries, JITTER_STEP_MS, WAKE_SLICE, waitJitterMs, type BlockingMetrics } from '../../../src/consul/blocking.js';
import { seededRng } from '../../../src/clock/rng.js';
import type { ServiceChange, ServiceViews } from '../../../src/views/service-views.js';
import { LimitsPort } from '../../../src/adapters/limits.js';
import { testConfig } from '../../support/node.js';
import { FakeClock } from '../../support/fake-clock.js';

/** The read layer's change feed alone: what BlockingQueries follows. */
function feed() {
  let listener: ((change: ServiceChange) => void) | undefined;
  const views = { onChange: (fn: (change: ServiceChange) => void) => ((listener = fn), () => (listener = undefined)) } as unknown as ServiceViews;
  return { views, change: (service: string, namespace = 'default') => listener?.({ namespace, service, revision: 0 }) };
}

/** The peer's limits port with the rate limit off and /v1's default share. */
const limitsPort = (clock: FakeClock) => new LimitsPort(clock, { ...testConfig({ limits: { rateLimitPerSecond: 0 } }).limits });

const flushMicrotasks = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('BlockingQueries', () => {
  it('wakes the queries of a change in slices: the first at once, the rest one slice per loop turn', async () => {
    const { views, change } = feed();
    const clock = new FakeClock();
    const blocking = new BlockingQueries({ views, clock, rng: seededRng(1), limits: limitsPort(clock) }, { maxWaiters: 1_000 });
    const index = blocking.indexes.service('default', 'web');
    let woken = 0;
    const total = WAKE_SLICE * 2 + 17;
    const held = Array.from({ length: total }, (_, i) => blocking.wait('default', 'web', index, 60_000, { address: `10.0.${i % 250}.${i}` }, { isGone: false }).then(() => (woken += 1)));
    expect(blocking.size).toBe(total);
    change('api');
    await flushMicrotasks();
    expect(woken).toBe(0);
    change('web');
    await flushMicrotasks();
    expect(woken).toBe(WAKE_SLICE);
    await new Promise((resolve) => setImmediate(resolve));
    await flushMicrotasks();
    expect(woken).toBe(WAKE_SLICE * 2);
    await Promise.all(held);
    expect(woken).toBe(total);
    expect(blocking.size).toBe(0);
    blocking.close();
  });

  it('frees the slot of a query whose client went away', async () => {
    const { views } = feed();
    const clock = new FakeClock();
    const blocking = new BlockingQueries({ views, clock, rng: seededRng(1), limits: limitsPort(clock) }, { maxWaiters: 10 });
    const gone: { onGone?: () => void; isGone: boolean } = { isGone: false };
    const held = blocking.wait('default', 'web', blocking.indexes.floor, 60_000, { address: '10.0.0.1' }, gone);
    expect(blocking.heldBy('address:10.0.0.1')).toBe(1);
    gone.isGone = true;
    gone.onGone?.();
    await held;
    expect(blocking.size).toBe(0);
    blocking.close();
  });

  it('wakes only the group of the change: its namespace and service, and its namespace catalog', async () => {
    const { views, change } = feed();
    const clock = new FakeClock();
    const blocking = new BlockingQueries({ views, clock, rng: seededRng(1), limits: limitsPort(clock) }, { maxWaiters: 100 });
    const woken: string[] = [];
    const hold = (namespace: string, service: string | null) =>
      blocking
        .wait(namespace, service, service === null ? blocking.indexes.catalog(namespace) : blocking.indexes.service(namespace, service), 60_000, { address: '10.0.0.1' }, { isGone: false })
        .then(() => woken.push(`${namespace}/${service ?? '*'}`));
    const held = [hold('default', 'web'), hold('default', 'api'), hold('team-a', 'web'), hold('default', null), hold('team-a', null)];
    change('WEB', 'team-a');
    await flushMicrotasks();
    expect(woken.sort()).toEqual(['team-a/*', 'team-a/web']);
    expect(blocking.size).toBe(3);
    change('web');
    await flushMicrotasks();
    expect(woken.sort()).toEqual(['default/*', 'default/web', 'team-a/*', 'team-a/web']);
    blocking.close();
    await Promise.all(held);
  });

  it('drops a waiter whose client went away: a later change answers it no second time and counts no push for it', async () => {
    const { views, change } = feed();
    const clock = new FakeClock();
    const pushedAt: number[] = [];
    const metrics = { pool: () => ({ refused: () => undefined }), pushes: { pushed: (changedAtMs: number) => pushedAt.push(changedAtMs) } } as unknown as BlockingMetrics;
    const blocking = new BlockingQueries({ views, clock, rng: seededRng(1), limits: limitsPort(clock), metrics }, { maxWaiters: 10 });
    const index = blocking.indexes.service('default', 'web');
    let answers = 0;
    const gone: { onGone?: () => void; isGone: boolean } = { isGone: false };
    const left = blocking.wait('default', 'web', index, 60_000, { address: '10.0.0.1' }, gone).then(() => (answers += 1));
    const stays = blocking.wait('default', 'web', index, 60_000, { address: '10.0.0.2' }, { isGone: false });
    gone.isGone = true;
    gone.onGone?.();
    await left;
    expect(blocking.size).toBe(1);
    change('web');
    await stays;
    expect(answers).toBe(1);
    expect(pushedAt).toHaveLength(1);
    expect(blocking.size).toBe(0);
    blocking.close();
  });

  it('adds up to 1/16 of a wait as jitter, in whole steps, and none to a wait under 16 steps', () => {
    const rng = seededRng(7);
    const jitters = Array.from({ length: 2_000 }, () => waitJitterMs(rng, 300_000));
    expect(jitters.every((ms) => ms % JITTER_STEP_MS === 0 && ms >= 0 && ms <= 300_000 / 16)).toBe(true);
    expect(new Set(jitters).size).toBe(Math.floor(300_000 / 16 / JITTER_STEP_MS) + 1);
    expect(Array.from({ length: 100 }, () => waitJitterMs(rng, 16 * JITTER_STEP_MS - 1)).every((ms) => ms === 0)).toBe(true);
  });
});
