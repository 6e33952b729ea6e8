import { describe, expect, it } from 'vitest';
import { planEvictions, runCap, serviceAllowance } from '../../../src/lease/eviction-budget.js';

describe('serviceAllowance', () => {
  it.each([
    [{ size: 10, evictedInWindow: 0 }, 0.3, 3],
    [{ size: 10, evictedInWindow: 2 }, 0.3, 1],
    [{ size: 10, evictedInWindow: 3 }, 0.3, 0],
    [{ size: 2, evictedInWindow: 0 }, 0.3, 1],
    [{ size: 1, evictedInWindow: 0 }, 0.3, 1],
    [{ size: 1, evictedInWindow: 1 }, 0.3, 0],
    [{ size: 100, evictedInWindow: 0 }, 1, Number.POSITIVE_INFINITY],
  ])('%o at %f -> %f', (budget, ratio, allowance) => {
    expect(serviceAllowance(budget, ratio)).toBe(allowance);
  });
});

describe('runCap', () => {
  it.each([
    [0, 0.1, 1],
    [5, 0.1, 1],
    [100, 0.1, 10],
    [100, 1, Number.POSITIVE_INFINITY],
  ])('%i served at %f -> %f', (served, ratio, cap) => {
    expect(runCap(served, ratio)).toBe(cap);
  });
});

describe('planEvictions', () => {
  const service = (candidate: string) => candidate.split(':')[0]!;

  it('evicts within each service cap and holds the rest', () => {
    const candidates = ['a:1', 'a:2', 'a:3', 'a:4', 'b:1'];
    const budgets = new Map([
      ['a', { size: 10, evictedInWindow: 0 }],
      ['b', { size: 10, evictedInWindow: 0 }],
    ]);
    const plan = planEvictions(candidates, service, budgets, { serviceMaxRatio: 0.3, runMax: 100 });
    expect(plan).toEqual({ evict: ['a:1', 'a:2', 'a:3', 'b:1'], heldByService: ['a:4'], cappedByService: new Map([['a', 1]]), heldByRun: [] });
  });

  it('counts what the window already evicted', () => {
    const plan = planEvictions(['a:1', 'a:2'], service, new Map([['a', { size: 10, evictedInWindow: 2 }]]), {
      serviceMaxRatio: 0.3,
      runMax: 100,
    });
    expect(plan.evict).toEqual(['a:1']);
    expect(plan.heldByService).toEqual(['a:2']);
  });

  it('stops at the per-run cap, keeping the order given', () => {
    const plan = planEvictions(['a:1', 'b:1', 'c:1'], service, new Map(), { serviceMaxRatio: 1, runMax: 2 });
    expect(plan).toEqual({ evict: ['a:1', 'b:1'], heldByService: [], cappedByService: new Map(), heldByRun: ['c:1'] });
  });

  it('evicts everything with both caps off', () => {
    const candidates = Array.from({ length: 50 }, (_, i) => `a:${i}`);
    expect(planEvictions(candidates, service, new Map(), { serviceMaxRatio: 1, runMax: Infinity }).evict).toHaveLength(50);
  });
});
