/**
 * What a local write's version costs: `HybridClock.next()` (the wall time's hex made once per
 * millisecond) against `formatVersion` of the same parts on every write (what `next()` did
 * before 2026-12-07). 1,000,000 versions a round, 20 a millisecond (a loaded peer's rate),
 * kept as a store keeps them; three rounds each, in turn.
 *
 *   npx tsx bench/hlc-versions.ts
 */
import type { Clock } from '../src/clock/clock.js';
import { formatVersion, HybridClock } from '../src/clock/hlc.js';

const VERSIONS = 1_000_000;
let nowMs = 1_795_967_828_668;
let calls = 0;
const clock: Clock = {
  nowMs: () => (++calls % 20 === 0 ? ++nowMs : nowMs),
  setTimeout: () => ({ cancel() {} }),
  setInterval: () => ({ cancel() {} }),
};
const hlc = new HybridClock(clock, 'peer-1');
let wallMs = 0;
let counter = 0;
const formatted = () => {
  const physicalMs = clock.nowMs();
  if (physicalMs > wallMs) {
    wallMs = physicalMs;
    counter = 0;
  } else counter += 1;
  return formatVersion({ wallMs, counter, peerId: 'peer-1' });
};
for (let round = 0; round < 3; round++) {
  for (const [name, next] of [['HybridClock.next', () => hlc.next()], ['formatVersion per write', formatted]] as const) {
    const kept: string[] = new Array(VERSIONS);
    const startedMs = performance.now();
    for (let i = 0; i < VERSIONS; i++) kept[i] = next();
    console.log(`${name.padEnd(24)} ${(((performance.now() - startedMs) * 1_000) / VERSIONS).toFixed(3)} µs a version`);
  }
}
