/**
 * What the joining peer of a start-up snapshot pays per record for three of its steps, in
 * process: `JSON.parse` of the frames, `liftExtensions` (every replicated and recovered
 * record's data) and `SharedValues.adopt` (the store sharing metadata and names), over
 * 1,000,000 records of 1,000 services with the five metadata keys of bench/scale-loader.ts,
 * frame by frame (2,000 records) as a join meets them, so that each record is warm in the
 * cache as it is there. Diagnostics: prints µs per record, writes nothing.
 *   npx tsx bench/join-decode.ts [--records=1000000]
 */
import { liftExtensions } from '../src/registry/extensions.js';
import { SharedValues } from '../src/registry/shared-values.js';
import type { InstanceRecord } from '../src/registry/types.js';

const RECORDS = Number(process.argv.find((arg) => arg.startsWith('--records='))?.slice('--records='.length) ?? 1_000_000);
const FRAME_RECORDS = 2_000;

function frameOf(first: number): string {
  const parts: string[] = [];
  for (let i = first; i < Math.min(RECORDS, first + FRAME_RECORDS); i++) {
    const data = {
      host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      port: 8080,
      securePort: null,
      status: 'UP',
      weight: 1,
      zone: 'a',
      metadata: { version: '1.4.2', zone: `z${i % 3}`, team: 'payments', build: `b${i % 977}`, commit: '7f3c2e1a' },
    };
    parts.push(JSON.stringify({ namespace: 'default', service: `svc-${Math.floor(i / 1_000)}`, instanceId: `i-${i}`, owner: 'peer-1', data }));
  }
  return `[${parts.join(',')}]`;
}

const frames: string[] = [];
for (let first = 0; first < RECORDS; first += FRAME_RECORDS) frames.push(frameOf(first));
const shared = new SharedValues();
const held: unknown[] = [];
const spentMs = { parse: 0, liftExtensions: 0, adopt: 0 };
let adopted = 0;
for (const frame of frames) {
  let startMs = performance.now();
  const records = JSON.parse(frame) as InstanceRecord[];
  spentMs.parse += performance.now() - startMs;
  startMs = performance.now();
  for (const record of records) liftExtensions('record.data', record.data as unknown as Record<string, unknown>);
  spentMs.liftExtensions += performance.now() - startMs;
  startMs = performance.now();
  for (const record of records) shared.adopt(record, adopted++);
  spentMs.adopt += performance.now() - startMs;
  held.push(records);
}
const perRecord = (ms: number) => `${((ms * 1_000) / RECORDS).toFixed(3)} µs`;
console.log(`${RECORDS} records: JSON.parse ${perRecord(spentMs.parse)}, liftExtensions ${perRecord(spentMs.liftExtensions)}, adopt ${perRecord(spentMs.adopt)} per record (${shared.metadataEntries} metadata maps shared, ${held.length} frames)`);
