/**
 * Summarises a V8 CPU profile (`node --cpu-prof`, e.g. `npx tsx bench/xds.ts --profile=DIR`):
 * the functions with the most self time, and the self time per origin (a package under
 * node_modules, Node's own internals, the project's dist/ folders, V8's pseudo-nodes).
 * `npx tsx bench/cpu-profile-top.ts FILE.cpuprofile [--top=30]`. Diagnostics only.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a function comes from: `@grpc/grpc-js`, `node:internal/http2`, `dist/xds`, `(garbage collector)`... */
export function originOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  const internal = /^node:internal\/([^/]+)/.exec(url);
  if (internal) return `node:internal/${internal[1]!.replace(/\.js$/, '')}`;
  const dist = /\/(dist|src|bench)\/([^/]+)/.exec(url);
  if (dist) return `${dist[1]}/${dist[2]!.replace(/\.js$/, '')}`;
  return url;
}

/** Self time (ms) per function and per origin, largest first. */
export function selfTimes(profile: CpuProfile): { totalMs: number; functions: [string, number][]; origins: [string, number][] } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const functions = new Map<string, number>();
  const origins = new Map<string, number>();
  let totalMs = 0;
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const frame = byId.get(id)?.callFrame;
    if (!frame) return;
    totalMs += ms;
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|src)\//, '$1/')}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + ms);
    const origin = originOf(frame.url, frame.functionName);
    origins.set(origin, (origins.get(origin) ?? 0) + ms);
  });
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
  return { totalMs, functions: sorted(functions), origins: sorted(origins) };
}

if (process.argv[1]?.endsWith('cpu-profile-top.ts')) {
  // Piped into `head`: stop quietly when the reader has had enough.
  process.stdout.on('error', () => process.exit(0));
  const file = process.argv[2];
  if (!file) throw new Error('usage: npx tsx bench/cpu-profile-top.ts FILE.cpuprofile [--top=30]');
  const top = Number(process.argv.find((arg) => arg.startsWith('--top='))?.slice(6) ?? 30);
  const { totalMs, functions, origins } = selfTimes(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
  const line = ([name, ms]: [string, number]) => `${ms.toFixed(0).padStart(8)} ms ${((100 * ms) / totalMs).toFixed(1).padStart(5)}%  ${name}`;
  console.log(`${file}: ${totalMs.toFixed(0)} ms sampled\n\nself time by origin:`);
  for (const entry of origins.slice(0, top)) console.log(line(entry));
  console.log('\nself time by function:');
  for (const entry of functions.slice(0, top)) console.log(line(entry));
}
