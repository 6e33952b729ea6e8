/**
 * One very large service: how long a read holds the event loop after each change, for the
 * native listing (`GET /v1/services/{s}`), the Eureka application (`GET /eureka/apps/{APP}`), a
 * Prometheus SD answer naming the service, and a watch's snapshot of it. One peer in process (the test clock, so views
 * age only when the script says) with `--instances` instances in one service (default
 * 100,000; `limits.instancesPerServiceMax` raised to allow it), listening on 127.0.0.1; each
 * read is made by `curl` in a child process, so the client's work is not the peer's loop's.
 * Per route, six rounds: one instance changes, 1.1 s of the test clock pass, one read; each
 * round prints the read's total time and the longest gap of a setImmediate ticker meanwhile.
 * The watch (`GET /v1/watch?services=big`) is read for 1.5 s: its snapshot, written in pieces.
 *
 *   npx tsx bench/large-service.ts [--instances=100000]
 */
import { spawn } from 'node:child_process';
import { buildServer } from '../src/http/server.js';
import { instance } from '../test/support/cluster.js';
import { createTestNode } from '../test/support/node.js';
import { table, turnGaps } from './lib.js';

const argument = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const N = argument('instances', 100_000);
const { node, clock } = await createTestNode({ file: { limits: { instancesPerServiceMax: 1_000_000, instancesPerNamespaceMax: 10_000_000 } } });
const app = await buildServer({ node });
await app.listen({ host: '127.0.0.1', port: 0 });
const port = (app.server.address() as { port: number }).port;
const data = (host: string, port: number, metadata: Record<string, string>) => ({ host, port, securePort: null, status: 'UP' as const, weight: 1, zone: '', metadata });
for (let i = 0; i < N; i++) node.registry.register(instance(`i-${i}`, { service: 'big', data: data(`10.0.${(i >> 8) & 255}.${i & 255}`, 1 + (i % 60_000), { a: 'x' }) }));

/** One GET by curl; answers the status code. A stream (`maxSeconds`) is read that long, then dropped. */
function curl(url: string, maxSeconds?: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const limit = maxSeconds === undefined ? [] : ['--max-time', String(maxSeconds)];
    const child = spawn('curl', ['-s', ...limit, '-o', '/dev/null', '-w', '%{http_code}', '-H', 'accept: application/json', `http://127.0.0.1:${port}${url}`]);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', () => resolve(Number(out)));
  });
}

const rows: Record<string, string>[] = [];
for (const [name, url] of [
  ['native listing', '/v1/services/big'],
  ['Eureka application', '/eureka/apps/BIG'],
  ['Prometheus SD', '/v1/sd/prometheus?services=big'],
  // Read for 1.5 s: the snapshot, then whatever follows (its total is that time).
  ['watch (SSE) snapshot', '/v1/watch?services=big'],
] as const) {
  const rounds: string[] = [];
  for (let round = 0; round < 6; round++) {
    node.registry.register(instance(`i-${round}`, { service: 'big', data: data('10.9.9.9', 1 + round, { a: 'y' }) }));
    await clock.advance(1_100);
    let status = 0;
    const gaps = await turnGaps(async () => {
      status = await curl(url, url.startsWith('/v1/watch') ? 1.5 : undefined);
    });
    if (status !== 200) throw new Error(`${url} answered ${status}`);
    rounds.push(`${Math.round(gaps.totalMs)} / ${Math.round(gaps.longestMs)}`);
  }
  rows.push({ read: name, 'each round: total / longest turn (ms)': rounds.join(', ') });
}
console.log(`One service of ${N} instances, a read after each change (in process, curl as the client)`);
console.log(table(rows));
await app.close();
await node.stop();
