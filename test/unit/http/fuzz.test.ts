import { describe, expect, it } from 'vitest';
import { fuzzRoutes, fuzzTarget } from '../../support/fuzz.js';

/**
 * Every route's path, query and body, fuzzed (test/support/fuzz.ts): never a 5xx, never a
 * crash, a refused request changes nothing. A few thousand cases here; `npx tsx
 * bench/fuzz-soak.ts` runs as many as asked for.
 */
describe('fuzzing every route', () => {
  it('in dev mode (every request reaches its route)', async () => {
    const target = await fuzzTarget(false);
    const { statuses } = await fuzzRoutes(target, 2_000);
    // The fuzzer reaches the handlers: successes and validation errors both occur.
    expect([...statuses.keys()].some((status) => status < 300)).toBe(true);
    expect(statuses.get(400)).toBeGreaterThan(100);
    await target.app.close();
  }, 60_000);

  it('with every guard on (random credentials and signatures)', async () => {
    const target = await fuzzTarget(true);
    const { statuses } = await fuzzRoutes(target, 1_500);
    for (const status of [200, 400, 401, 403]) expect(statuses.get(status), `status ${status}`).toBeGreaterThan(0);
    await target.app.close();
  }, 60_000);
});
