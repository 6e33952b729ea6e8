import { describe, expect, it } from 'vitest';
import { LineBudget } from '../../../src/log/line-budget.js';
import { WRITE_LINES_PER_SECOND } from '../../../src/registry/registry.js';
import { parseRegistration } from '../../../src/registry/validate.js';
import { FakeClock } from '../../support/fake-clock.js';
import { createTestNode } from '../../support/node.js';
import { recordingLogger } from '../../support/recording-logger.js';

describe('LineBudget', () => {
  it('allows so many lines a second, counts the rest, and tells the count once', async () => {
    const clock = new FakeClock();
    const summaries: [number, number][] = [];
    const budget = new LineBudget(clock, 3, (count, sinceMs) => summaries.push([count, sinceMs]));
    const startMs = clock.nowMs();
    expect(Array.from({ length: 5 }, () => budget.allow())).toEqual([true, true, true, false, false]);
    expect(summaries).toEqual([]);
    await clock.advance(999);
    expect(budget.allow()).toBe(false);
    await clock.advance(1);
    // A new second: the summary of the last one first, then a fresh budget.
    expect(budget.allow()).toBe(true);
    expect(summaries).toEqual([[3, startMs]]);
    budget.flush();
    expect(summaries).toHaveLength(1); // nothing counted since
  });

  it('starts a new second when the wall clock steps back, rather than waiting for it', () => {
    let nowMs = 10_000;
    const clock = { nowMs: () => nowMs } as unknown as FakeClock;
    const summaries: number[] = [];
    const budget = new LineBudget(clock, 1, (count) => summaries.push(count));
    expect([budget.allow(), budget.allow()]).toEqual([true, false]);
    nowMs = 5_000;
    expect(budget.allow()).toBe(true);
    expect(summaries).toEqual([1]);
  });

  it('flush tells what was counted without waiting for the next event', async () => {
    const clock = new FakeClock();
    const summaries: number[] = [];
    const budget = new LineBudget(clock, 1, (count) => summaries.push(count));
    budget.allow();
    budget.allow();
    budget.allow();
    budget.flush();
    budget.flush();
    expect(summaries).toEqual([2]);
  });
});

describe('the registry under a burst of registrations', () => {
  it('logs the first ones of each second at info, the rest at debug, and one summary when the reaper runs', async () => {
    const logger = recordingLogger();
    const { node } = await createTestNode({ logger });
    const burst = WRITE_LINES_PER_SECOND + 40;
    for (let i = 0; i < burst; i++) {
      const body = { service: 'svc', host: '10.0.0.1', port: 1 + i, leaseDurationMs: 30_000 };
      node.registry.register(parseRegistration(body, 'default', node.config.limits, node.config.cluster));
    }
    const lines = (level: string, msg: string) => logger.lines.filter((line) => line.level === level && line.msg === msg);
    expect(lines('info', 'instance registered')).toHaveLength(WRITE_LINES_PER_SECOND);
    expect(lines('debug', 'instance registered')).toHaveLength(40);
    node.reaper.runOnce();
    const summary = logger.lines.filter((line) => line.msg.startsWith('instance writes logged at debug only'));
    expect(summary).toHaveLength(1);
    expect(summary[0]).toMatchObject({ level: 'info', fields: { count: 40, component: 'registry' } });
    // Cancels share the budget; evictions never do (they are always at info).
    node.registry.cancel({ namespace: 'default', service: 'svc', instanceId: '10.0.0.1:1' });
    expect(lines('debug', 'instance cancelled')).toHaveLength(1);
  });
});
