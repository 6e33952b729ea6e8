/**
 * What keeps the nodes of a heap snapshot alive: the nodes of one type whose name starts with
 * a prefix (a string's name is its text, an object's its constructor), grouped by the chain of
 * their first retainers (numbers in names folded to 9, so that alike chains group), with the
 * bytes and count of each group. Found so: the native listing cache's parts behind 8 MB of a
 * cluster peer's slope (docs/benchmarks.md, Capacity).
 *   node --max-old-space-size=8000 --import tsx bench/heap-retainers.ts FILE TYPE [PREFIX] [--depth=5] [--top=12]
 * TYPE is a snapshot node type: string, sliced string, concatenated string, object, array,
 * number... Prints, writes nothing.
 */
import { HeapSnapshot } from './heap-snapshot.js';

const [file, type, prefix = ''] = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
if (file === undefined || type === undefined) throw new Error('usage: bench/heap-retainers.ts FILE TYPE [PREFIX] [--depth=5] [--top=12]');
const option = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const depth = option('depth', 5);
const top = option('top', 12);

const snapshot = new HeapSnapshot(file);
/** The first retainer of every node, through a strong edge. */
const retainer = new Map<number, { from: number; name: string }>();
for (const node of snapshot.nodeIndexes()) {
  for (const edge of snapshot.edgesOf(node)) {
    if (edge.type !== 'weak' && !retainer.has(edge.to)) retainer.set(edge.to, { from: node, name: edge.type === 'element' || edge.type === 'hidden' ? '#' : edge.name });
  }
}
const fold = (text: string) => text.slice(0, 60).replace(/\d+/g, '9');
const groups = new Map<string, { count: number; bytes: number }>();
for (const node of snapshot.nodeIndexes()) {
  if (snapshot.typeOf(node) !== type || !snapshot.nameOf(node).startsWith(prefix)) continue;
  const chain: string[] = [];
  for (let at = node, level = 0; level < depth; level++) {
    const up = retainer.get(at);
    if (up === undefined) break;
    chain.push(`${fold(up.name)} <- ${snapshot.typeOf(up.from)}:${fold(snapshot.nameOf(up.from))}`);
    at = up.from;
  }
  const key = chain.join(' | ');
  const group = groups.get(key) ?? { count: 0, bytes: 0 };
  group.count += 1;
  group.bytes += snapshot.selfSize(node);
  groups.set(key, group);
}
for (const [chain, group] of [...groups].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top)) {
  console.log(`${(group.bytes / 1_048_576).toFixed(2).padStart(8)} MB ${String(group.count).padStart(9)}  ${chain}\n`);
}
