/**
 * What the size of one snapshot frame costs on each side, in process: 2,000 wire records of
 * bench/scale-loader.ts's shape as one frame (about 830 KB) against the same records as frames
 * of 250 (about 100 KB, below V8's largest ordinary heap object, 128 KB), each step timed over
 * many calls: `JSON.stringify` of the frames (the serving side), `Buffer.toString` of their
 * bytes and `JSON.parse` of the text (the joining side), and the writer used before 6825156 (a
 * string per record, `Buffer.byteLength` of each and a `join`) beside one `JSON.stringify`.
 * The figures in src/replication/snapshot-frames.ts and bench/findings.md (2026-12-07, 17:14
 * on) come from these steps. Diagnostics: prints ms per call, writes nothing.
 *   npx tsx bench/frame-sizes.ts [--rounds=3]
 */
import { scaleBody } from './scale-loader.js';

const ROUNDS = Number(process.argv.find((arg) => arg.startsWith('--rounds='))?.slice('--rounds='.length) ?? 3);
const SMALL = 250;

const records = Array.from({ length: 2_000 }, (_, i) => {
  const body = scaleBody(i, 1_000) as { service: string; instanceId: string; host: string; port: number; metadata: Record<string, string> };
  return {
    namespace: 'default',
    service: body.service,
    instanceId: body.instanceId,
    data: { host: body.host, port: body.port, securePort: null, status: 'UP', weight: 1, zone: 'a', metadata: body.metadata },
    version: `0001796664${String(i).padStart(9, '0')}-0000-peer-1`,
    owner: 'peer-1',
    deleted: null,
    leaseDurationMs: 600_000,
    registeredAtMs: 1_796_664_000_000 + i,
    leaseRemainingMs: 599_000,
  };
});
const smallFrames = Array.from({ length: records.length / SMALL }, (_, k) => records.slice(k * SMALL, (k + 1) * SMALL));
const big = Buffer.from(JSON.stringify({ t: 'records', records }));
const smalls = smallFrames.map((part) => Buffer.from(JSON.stringify({ t: 'records', records: part })));
const parts = records.map((record) => JSON.stringify(record));

/** Sums what every step returns, printed at the end, so that no step's work can be left out. */
let checksum = 0;

function time(name: string, calls: number, work: () => number): void {
  const startedMs = performance.now();
  for (let call = 0; call < calls; call++) checksum += work();
  console.log(`${name}: ${((performance.now() - startedMs) / calls).toFixed(3)} ms per call`);
}

console.log(`one frame of ${records.length} records: ${big.length} bytes; ${smalls.length} frames of ${SMALL}: ${smalls[0]!.length} bytes each`);
for (let round = 1; round <= ROUNDS; round++) {
  console.log(`round ${round}`);
  time('  serving, JSON.stringify of the one frame', 100, () => JSON.stringify({ t: 'records', records }).length);
  time(`  serving, JSON.stringify of the ${smalls.length} frames`, 100, () => smallFrames.reduce((n, part) => n + JSON.stringify({ t: 'records', records: part }).length, 0));
  time('  serving before 6825156, a string per record, byteLength and join', 100, () => {
    const parts = records.map((record) => JSON.stringify(record));
    let bytes = 0;
    for (const part of parts) bytes += Buffer.byteLength(part);
    return bytes + `{"t":"records","records":[${parts.join(',')}]}\n`.length;
  });
  time('  of which the join of the parts', 100, () => `{"t":"records","records":[${parts.join(',')}]}\n`.length);
  time('  joining, toString of the one frame', 200, () => big.toString('utf8').length);
  time(`  joining, toString of the ${smalls.length} frames`, 200, () => smalls.reduce((n, bytes) => n + bytes.toString('utf8').length, 0));
  time('  joining, toString and JSON.parse of the one frame', 100, () => (JSON.parse(big.toString('utf8')) as { records: unknown[] }).records.length);
  time(`  joining, toString and JSON.parse of the ${smalls.length} frames`, 100, () => smalls.reduce((n, bytes) => n + (JSON.parse(bytes.toString('utf8')) as { records: unknown[] }).records.length, 0));
}
console.log(`checksum ${checksum}`);
