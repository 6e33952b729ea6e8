/**
 * What a namespace-wide list costs the event loop at N instances over S services (defaults
 * 1,000,000 and 200,000: five instances a service, the shape where per-service work adds up),
 * in process, each against the way it was done before in the same run:
 *   - `views.servicesOf`: the sorted names, kept while no service is made or dropped, against
 *     the walk over every service and the sort on every call;
 *   - `serviceSummaries` (the Nacos service list and `/operator/metrics`): its longest turn,
 *     cold (every stable view built) and warm (with the 99th percentile of its turns and its
 *     whole time), against the same counts in one piece.
 * Milliseconds; a turn is timed from one yield to the next.
 *   npx tsx bench/namespace-lists.ts [--instances=1000000] [--services=200000]
 */
import { applicationOf } from '../src/app/application.js';
import { serviceSummaries } from '../src/http/namespace-slices.js';
import { createTestNode } from '../test/support/node.js';
import { record } from '../test/support/records.js';
import { round, table, turnGaps } from './lib.js';

const argument = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const N = argument('instances', 1_000_000);
const S = argument('services', 200_000);
const METADATA = { a: 'x', b: 'y', c: 'z', d: 'w', e: 'v' };

const { node, clock } = await createTestNode({ start: false });
const dataOf = (i: number) => ({ host: '10.0.0.2', port: 1 + (i % 60_000), securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata: METADATA });
for (let i = 0; i < N; i++) {
  node.registry.applyRemote(record({ service: `svc-${i % S}`, instanceId: `i-${i}`, peerId: 'peer-b', wallMs: clock.nowMs(), data: dataOf(i), leaseDurationMs: 30_000 }), 30_000);
}
const reads = applicationOf(node).reads;
const { views } = reads;
const timed = (work: () => void): number => {
  const startedMs = performance.now();
  work();
  return round(performance.now() - startedMs, 1);
};

/** The counts in one piece, as `RegistryReads.services` made them before. */
function summariesInOnePiece(): number {
  const leases = reads.leaseView();
  let served = 0;
  for (const service of views.servicesOf('default')) served += reads.countsOf(views.stable('default', service, leases), null)?.instances ?? 0;
  return served;
}

const rows: Record<string, string | number>[] = [];
for (let r = 0; r < 3; r++) {
  const builtMs = timed(() => {
    const names: string[] = [];
    for (const entries of node.store.allServices()) if (entries.namespace === 'default') names.push(entries.service);
    names.sort();
  });
  const keptMs = timed(() => views.servicesOf('default'));
  rows.push({ pass: `views.servicesOf, round ${r + 1}`, 'ms now': keptMs, 'ms reference': builtMs, reference: 'every service walked and sorted' });
}
/** A new version of the first instance of every service: every stable view must be built again (cold). */
function touchEveryService(): void {
  clock.jump(1);
  for (let i = 0; i < S; i++) node.registry.applyRemote(record({ service: `svc-${i}`, instanceId: `i-${i}`, peerId: 'peer-b', wallMs: clock.nowMs(), data: dataOf(i), leaseDurationMs: 30_000 }), 30_000);
}
for (const phase of ['cold', 'warm'] as const) {
  if (phase === 'cold') touchEveryService();
  const sliced = await turnGaps(() => serviceSummaries(reads, 'default', null));
  if (phase === 'cold') touchEveryService();
  const whole = timed(() => summariesInOnePiece());
  rows.push({ pass: `serviceSummaries, ${phase}: longest turn (p99 ${sliced.p99Ms} ms, all ${sliced.totalMs} ms)`, 'ms now': sliced.longestMs, 'ms reference': whole, reference: 'the counts in one piece' });
}
console.log(`${N.toLocaleString('en')} instances, ${S.toLocaleString('en')} services, in process (${new Date().toISOString()})\n${table(rows)}`);
await node.stop();
