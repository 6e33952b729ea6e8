/**
 * Summarises heap sampling profiles of bench/heap-sampling-preload.cjs: sampled bytes by the
 * three innermost frames of where they were allocated, largest first.
 *   npx tsx bench/heap-sampling-top.ts PROFILE [LIVE.heapprofile] [--top=N]
 * With an allocation profile (`HEAP_SAMPLING_ALL=1`) and a live one of the same load, rows are
 * sorted by the difference: what a site allocated beyond what is still alive from it.
 * Frames are functions (V8 does not record lines within them; builtins such as JSON.stringify
 * count in their caller); run the process with `--no-turbo-inlining` for exact ones. Prints only.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

function bytesBySite(file: string): { bySite: Map<string, number>; total: number } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: ProfileNode };
  const bySite = new Map<string, number>();
  let total = 0;
  const visit = (node: ProfileNode, stack: string[]): void => {
    const { functionName, url, lineNumber } = node.callFrame;
    const frames = [...stack.slice(-2), `${functionName || '(anonymous)'} ${url.replace(/.*\/(dist|node_modules)\//, '$1/')}:${lineNumber + 1}`];
    if (node.selfSize > 0) {
      total += node.selfSize;
      const site = [...frames].reverse().join(' <- ');
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children) visit(child, frames);
  };
  visit(profile.head, []);
  return { bySite, total };
}

const files = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const top = Number(process.argv.find((arg) => arg.startsWith('--top='))?.slice(6) ?? 25);
if (files.length === 0) throw new Error('usage: heap-sampling-top.ts PROFILE [LIVE.heapprofile] [--top=N]');
const mb = (bytes: number) => (bytes / 1_048_576).toFixed(1).padStart(7);
const first = bytesBySite(files[0]!);
const live = files[1] === undefined ? undefined : bytesBySite(files[1]);
console.log(`sampled: ${mb(first.total)} MB${live ? `, live ${mb(live.total)} MB` : ''}`);
const sites = [...new Set([...first.bySite.keys(), ...(live?.bySite.keys() ?? [])])];
const rows = sites.map((site) => ({ site, first: first.bySite.get(site) ?? 0, second: live?.bySite.get(site) ?? 0 }));
rows.sort((a, b) => b.first - b.second - (a.first - a.second));
console.log(live ? '     MB    live  where' : '     MB  where');
for (const row of rows.slice(0, top)) console.log(`${mb(row.first)}${live ? ` ${mb(row.second)}` : ''}  ${row.site}`);
