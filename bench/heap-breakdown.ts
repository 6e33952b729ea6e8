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
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Sum {
  count: number;
  bytes: number;
}

const file = process.argv[2];
if (file === undefined || file.startsWith('--')) throw new Error('usage: bench/heap-breakdown.ts FILE [--instances=N] [--top=N]');
const option = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const perInstance = option('instances', 52_000);
const top = option('top', 20);

const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const meta = snap.snapshot.meta;
const nodeTypes = meta.node_types[0];
const edgeTypes = meta.edge_types[0];
const N = meta.node_fields.length;
const E = meta.edge_fields.length;
const [TYPE, NAME, SELF, EDGES] = ['type', 'name', 'self_size', 'edge_count'].map((field) => meta.node_fields.indexOf(field)) as [number, number, number, number];
const [EDGE_TYPE, EDGE_NAME, EDGE_TO] = ['type', 'name_or_index', 'to_node'].map((field) => meta.edge_fields.indexOf(field)) as [number, number, number];
const { nodes, edges, strings } = snap;

const add = (sums: Map<string, Sum>, key: string, bytes: number) => {
  const sum = sums.get(key) ?? { count: 0, bytes: 0 };
  sum.count += 1;
  sum.bytes += bytes;
  sums.set(key, sum);
};
const typeOf = (node: number) => nodeTypes[nodes[node + TYPE]!]!;

const objects = new Map<string, Sum>();
const held = new Map<string, Sum>();
const mapTables = new Map<string, Sum>();
const counted = new Set<number>();
/** The table of each Map object (its node index to the table's size). */
const tableOf = new Map<number, number>();
const firstEdge: number[] = [];
for (let node = 0, edge = 0; node < nodes.length; node += N) {
  firstEdge.push(edge);
  edge += nodes[node + EDGES]! * E;
}
const edgesOf = (node: number) => {
  const out: { type: string; name: string; to: number }[] = [];
  const first = firstEdge[node / N]!;
  for (let k = 0; k < nodes[node + EDGES]!; k++) {
    const edge = first + k * E;
    const type = edgeTypes[edges[edge + EDGE_TYPE]!]!;
    const nameOrIndex = edges[edge + EDGE_NAME]!;
    out.push({ type, name: type === 'element' || type === 'hidden' ? `#${nameOrIndex}` : strings[nameOrIndex]!, to: edges[edge + EDGE_TO]! });
  }
  return out;
};
for (let node = 0; node < nodes.length; node += N) {
  if (typeOf(node) !== 'object' || strings[nodes[node + NAME]!] !== 'Map') continue;
  const table = edgesOf(node).find((edge) => edge.name === 'table');
  if (table) tableOf.set(node, nodes[table.to + SELF]!);
}
for (let node = 0; node < nodes.length; node += N) {
  if (typeOf(node) !== 'object') continue;
  const out = edgesOf(node);
  const shape = `${strings[nodes[node + NAME]!]}{${out.filter((edge) => edge.type === 'property').map((edge) => edge.name).slice(0, 6).join(',')}}`;
  add(objects, shape, nodes[node + SELF]!);
  for (const edge of out) {
    const target = typeOf(edge.to);
    if ((target.includes('string') || target === 'number') && !counted.has(edge.to)) {
      counted.add(edge.to);
      add(held, `${target} in ${shape}.${edge.name}`, nodes[edge.to + SELF]!);
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
