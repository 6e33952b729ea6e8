import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sortInTurns, TurnBudget } from '../../../src/eureka/turn-budget.js';

/** A budget of `turnUnits` on a clock the test moves, and the yields it made. */
function budgetOf(turnUnits: number, turnMaxMs = 4) {
  const clock = { ms: 0 };
  let yields = 0;
  const budget = new TurnBudget({ yieldTurn: async () => void (yields += 1), elapsedMs: () => clock.ms }, { turnUnits, turnMaxMs });
  return { budget, clock, yields: () => yields };
}

describe('TurnBudget', () => {
  it.each([
    // [units spent per step, steps, yields]: one yield per full budget, however it is spent.
    [1, 9_999, 1],
    [1, 10_000, 2],
    [20, 250, 1],
    [20, 749, 2],
    [6, 2_501, 2],
    [6, 2_502, 3],
    [5_000, 3, 3],
  ])('spending %i units %i times with a budget of 5,000 yields %i times', async (units, steps, yields) => {
    const { budget, yields: counted } = budgetOf(5_000);
    for (let i = 0; i < steps; i++) if (budget.spend(units)) await budget.yield();
    expect(counted()).toBe(yields);
  });

  it('yields once a turn has held the loop for its time, looking at the clock every 500 units', async () => {
    const { budget, clock } = budgetOf(5_000, 4);
    expect(budget.spend(499)).toBe(false);
    clock.ms = 10;
    // Under 500 units since the turn began: the clock is not looked at.
    expect(budget.spend(0)).toBe(false);
    expect(budget.spend(1)).toBe(true);
    await budget.yield();
    // The next turn starts its time and count again.
    expect(budget.spend(499)).toBe(false);
    clock.ms = 13;
    expect(budget.spend(1)).toBe(false);
    clock.ms = 14;
    // The next look is 500 units later.
    expect(budget.spend(499)).toBe(false);
    expect(budget.spend(1)).toBe(true);
  });
});

describe('sortInTurns', () => {
  it('sorts as Array.prototype.sort does, stably, in turns of its budget', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ key: fc.integer({ min: 0, max: 50 }), at: fc.nat() }), { maxLength: 3_000 }), async (items) => {
        const { budget, yields } = budgetOf(700);
        const compare = (a: { key: number }, b: { key: number }) => a.key - b.key;
        const sorted = await sortInTurns(items, compare, budget);
        expect(sorted).toEqual(items.slice().sort(compare));
        // Every item is placed once per pass (and once in its run): at least that many units spent.
        const passes = items.length <= 512 ? 0 : Math.ceil(Math.log2(items.length / 512));
        expect(yields()).toBeGreaterThanOrEqual(Math.floor((items.length * (1 + passes)) / 700));
      }),
      { numRuns: 40 },
    );
  });
});
