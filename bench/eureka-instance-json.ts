/**
 * One Eureka instance's JSON, the two ways a shared full fetch or delta can write it, in one
 * run: the instance object (`toEurekaInstance`) through `JSON.stringify`, with each slice's
 * text made a buffer by `Buffer.from` (how src/eureka/shared-documents.ts wrote before), and
 * `eurekaInstanceJson` appended to a `ByteBuilder` (how it writes now). N stored instances
 * (default 200,000) over 1,000 services, five metadata keys from 500 shared maps (as the
 * store shares them), every fourth registered through Eureka (its attributes in the record).
 * In process, rounds alternated; prints µs per instance (median of the rounds) and the ratio.
 *
 *   npx tsx bench/eureka-instance-json.ts [--instances=200000] [--rounds=5]
 */
import { formatVersion } from '../src/clock/hlc.js';
import { withEureka } from '../src/eureka/attributes.js';
import { eurekaInstanceJson } from '../src/eureka/instance-json.js';
import { toEurekaInstance } from '../src/eureka/instance-view.js';
import { ByteBuilder } from '../src/http/byte-builder.js';
import type { InstanceData, StoredInstance } from '../src/registry/types.js';
import { eurekaAttributes } from '../test/unit/eureka/fixtures.js';
import { round, table } from './lib.js';

const argument = (name: string, fallback: string): string =>
  process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const INSTANCES = Number(argument('instances', '200000'));
const ROUNDS = Number(argument('rounds', '5'));
/** Instances per slice, as shared-documents.ts builds them. */
const SLICE = 250;

const metadataMaps = Array.from({ length: 500 }, (_, j) => ({ version: `1.${j}`, team: `team-${j % 20}`, tier: 'web', region: 'eu', owner: 'platform' }));
const entries: StoredInstance[] = Array.from({ length: INSTANCES }, (_, i) => {
  const core: InstanceData = {
    host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    port: 8080,
    securePort: null,
    status: 'UP',
    weight: 1,
    zone: `zone-${i % 3}`,
    metadata: metadataMaps[i % metadataMaps.length]!,
  };
  const wallMs = 1_733_390_000_000 + i;
  return {
    record: {
      namespace: 'default',
      service: `svc-${i % 1_000}`,
      instanceId: `instance-${i}`,
      data: i % 4 === 0 ? withEureka(core, eurekaAttributes({ hostName: `host-${i}.local`, ipAddr: core.host, vipAddress: `svc-${i % 1_000}` })) : core,
      version: formatVersion({ wallMs, counter: 0, peerId: 'peer-abcdefgh' }),
      owner: 'peer-abcdefgh',
      deleted: null,
      leaseDurationMs: 90_000,
      registeredAtMs: wallMs,
    },
    leaseExpiresAtMs: wallMs + 90_000,
    heardUntilMs: 0,
    hidden: false,
    held: false,
    ownedSinceMs: 0,
    revision: i,
    subBucket: 0,
  };
});
const defaults = { renewalIntervalSecs: 30 };

function objectRoute(): number {
  let bytes = 0;
  let text = '';
  for (let i = 0; i < entries.length; i++) {
    if (i % SLICE === 0 && i > 0) {
      bytes += Buffer.from(text).length;
      text = '';
    }
    text += (i % SLICE === 0 ? '' : ',') + JSON.stringify(toEurekaInstance(entries[i]!, defaults));
  }
  return bytes + Buffer.from(text).length;
}

function writer(): number {
  let bytes = 0;
  const builder = new ByteBuilder();
  for (let i = 0; i < entries.length; i++) {
    if (i % SLICE === 0 && i > 0) bytes += builder.take().length;
    if (i % SLICE !== 0) builder.append(',');
    builder.append(eurekaInstanceJson(entries[i]!, defaults));
  }
  return bytes + builder.take().length;
}

const routes = { 'object + JSON.stringify + Buffer.from': objectRoute, 'eurekaInstanceJson + ByteBuilder': writer };
const times: Record<string, number[]> = {};
const sizes = new Set<number>();
for (let r = 0; r < ROUNDS + 1; r++) {
  for (const [name, route] of Object.entries(routes)) {
    const startedMs = performance.now();
    sizes.add(route());
    // The first round warms both routes up (optimisation), and is not counted.
    if (r > 0) (times[name] ??= []).push(((performance.now() - startedMs) * 1_000) / INSTANCES);
  }
}
if (sizes.size !== 1) throw new Error(`the two routes wrote different byte counts: ${[...sizes].join(', ')}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const [before, after] = Object.values(times).map(median) as [number, number];
console.log(`${INSTANCES.toLocaleString('en')} instances, ${[...sizes][0]! / INSTANCES} bytes each, median of ${ROUNDS} rounds`);
console.log(table(Object.entries(times).map(([name, values]) => ({ route: name, 'µs per instance': round(median(values), 2), rounds: values.map((v) => round(v, 2)).join(' / ') }))));
console.log(`ratio: ${round(before / after, 2)}x faster`);
