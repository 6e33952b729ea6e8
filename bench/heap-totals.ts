/**
 * What heap snapshots hold in all, by node type (objects, strings, arrays, code...), and with
 * `--instances` the bytes per instance between them: for snapshots of one peer at several
 * instance counts (`bench/scale.ts --heap-snapshots=DIR` writes one at each cluster step),
 * the least-squares slope of each type and of the whole, the live heap's own slope without
 * garbage (a snapshot collects first) or the heap's headroom.
 *   node --max-old-space-size=6000 --import tsx bench/heap-totals.ts FILE... [--instances=10000,50000,100000]
 * Prints, writes nothing.
 */
import { HeapSnapshot } from './heap-snapshot.js';
import { linearFit } from './memory.js';

const files = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const instancesArg = process.argv.find((arg) => arg.startsWith('--instances='))?.slice('--instances='.length);
const instances = instancesArg?.split(',').map(Number);
if (files.length === 0) throw new Error('usage: bench/heap-totals.ts FILE... [--instances=N,N,...]');
if (instances !== undefined && (instances.length !== files.length || instances.some((count) => !(count >= 0)))) {
  throw new Error('--instances: one count per file, in the same order');
}

const MB = 1_048_576;
const totals = files.map((file) => {
  const snapshot = new HeapSnapshot(file);
  const byType = new Map<string, number>();
  let all = 0;
  for (const node of snapshot.nodeIndexes()) {
    const bytes = snapshot.selfSize(node);
    all += bytes;
    byType.set(snapshot.typeOf(node), (byType.get(snapshot.typeOf(node)) ?? 0) + bytes);
  }
  byType.set('(all)', all);
  return byType;
});
const types = [...totals.at(-1)!.keys()].sort((a, b) => totals.at(-1)!.get(b)! - totals.at(-1)!.get(a)!);
const header = ['type'.padEnd(22), ...files.map((_, k) => (instances ? `${instances[k]}` : `#${k + 1}`).padStart(10)), instances ? 'B/instance'.padStart(11) : ''];
console.log(header.join(' '));
for (const type of types) {
  const mb = totals.map((byType) => (byType.get(type) ?? 0) / MB);
  const slope = instances && instances.length > 1 ? Math.round((linearFit(instances.map((count, k) => [count / 10_000, mb[k]!])).mbPer10k * MB) / 10_000) : undefined;
  console.log([type.padEnd(22), ...mb.map((value) => value.toFixed(1).padStart(10)), slope === undefined ? '' : String(slope).padStart(11)].join(' '));
}
