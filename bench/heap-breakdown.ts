/**
 * Where a heap snapshot's bytes go, per instance: objects summed by constructor and first
 * property names (their hidden class, roughly), strings and boxed numbers by the object field
 * that holds them (each counted once, at its first holder), and Map tables by the field holding
 * the Map. Reads a snapshot written by `bench/heap-slope.ts --snapshot=FILE`:
 *   node --max-old-space-size=6000 --import tsx bench/heap-breakdown.ts FILE [--instances=52000] [--top=20]
 * `--instances` divides every figure (heap-slope's warm-up 2,000 plus its `--instances`). The
 * snapshot holds the whole heap, the peer's fixed part included: rows that grow with the
 * instances are those with a count near a multiple of it. Prints, writes nothing.
 */
import { HeapSnapshot } from './heap-snapshot.js';

interface Sum {
  count: number;
  bytes: number;
}

const file = process.argv[2];
if (file === undefined || file.startsWith('--')) throw new Error('usage: bench/heap-breakdown.ts FILE [--instances=N] [--top=N]');
const option = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const perInstance = option('instances', 52_000);
const top = option('top', 20);

const snapshot = new HeapSnapshot(file);
const add = (sums: Map<string, Sum>, key: string, bytes: number) => {
  const sum = sums.get(key) ?? { count: 0, bytes: 0 };
  sum.count += 1;
  sum.bytes += bytes;
  sums.set(key, sum);
};

const objects = new Map<string, Sum>();
const held = new Map<string, Sum>();
const mapTables = new Map<string, Sum>();
const counted = new Set<number>();
/** The table of each Map object (its node index to the table's size). */
const tableOf = new Map<number, number>();
for (const node of snapshot.nodeIndexes()) {
  if (snapshot.typeOf(node) !== 'object' || snapshot.nameOf(node) !== 'Map') continue;
  const table = snapshot.edgesOf(node).find((edge) => edge.name === 'table');
  if (table) tableOf.set(node, snapshot.selfSize(table.to));
}
for (const node of snapshot.nodeIndexes()) {
  if (snapshot.typeOf(node) !== 'object') continue;
  const out = snapshot.edgesOf(node);
  const shape = `${snapshot.nameOf(node)}{${out.filter((edge) => edge.type === 'property').map((edge) => edge.name).slice(0, 6).join(',')}}`;
  add(objects, shape, snapshot.selfSize(node));
  for (const edge of out) {
    const target = snapshot.typeOf(edge.to);
    if ((target.includes('string') || target === 'number') && !counted.has(edge.to)) {
      counted.add(edge.to);
      add(held, `${target} in ${shape}.${edge.name}`, snapshot.selfSize(edge.to));
    }
    const table = tableOf.get(edge.to);
    if (table !== undefined && !counted.has(edge.to)) {
      counted.add(edge.to);
      add(mapTables, `${shape}.${edge.name}`, table);
    }
  }
}

const show = (title: string, sums: Map<string, Sum>) => {
  console.log(`\n${title} (bytes per instance, count, bytes each)`);
  for (const [key, sum] of [...sums].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top)) {
    console.log(`${(sum.bytes / perInstance).toFixed(1).padStart(8)}  ${String(sum.count).padStart(9)}  ${Math.round(sum.bytes / sum.count).toString().padStart(8)}  ${key}`);
  }
};
show('objects by constructor and properties', objects);
show('strings and boxed numbers by holder field (each once)', held);
show('Map tables by the field holding the Map', mapTables);
