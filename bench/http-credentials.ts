/**
 * The cost of reading a request's credentials in the adapters (src/adapters/access.ts,
 * `httpCredentials`), per request: ns per call and bytes allocated per call, for a request that
 * presents no credential (dev peers, open routes, Consul's `status/leader`) and for one with a
 * bearer token, next to the reading it replaced (REFERENCE below: a closure per call, a
 * `carriers.some` callback, a new object per call), measured in the same run.
 *
 * Bytes per call: the young generation is made large enough (--max-semi-space-size) that no
 * scavenge runs inside a measured loop, so the heap's growth over the loop divided by the calls
 * is what one call allocates. `npx tsx bench/http-credentials.ts` (it starts itself again with
 * those flags); a few seconds.
 */
import { spawnSync } from 'node:child_process';
import { httpCredentials, type HttpRequestFacts, type PresentedCredentials } from '../src/adapters/access.js';
import type { CredentialCarrier } from '../src/adapters/contract.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  const child = spawnSync(process.execPath, ['--expose-gc', '--max-semi-space-size=512', ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}

/** The reading before this change, kept as the reference. */
function REFERENCE(request: HttpRequestFacts, carriers: readonly CredentialCarrier[]): PresentedCredentials {
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  };
  let token = carriers.includes('x-consul-token') ? header('x-consul-token') : undefined;
  if (token === undefined && carriers.includes('query-token')) {
    const value = ((request.query ?? {}) as Record<string, unknown>).token;
    if (typeof value === 'string' && value.length > 0) token = value;
  }
  if (token === undefined && carriers.includes('nacos-access-token')) {
    const query = (request.query ?? {}) as Record<string, unknown>;
    const value = typeof query.accessToken === 'string' && query.accessToken.length > 0 ? query.accessToken : query.password;
    if (typeof value === 'string' && value.length > 0) token = value;
  }
  const carriesAuthorization = carriers.some((carrier) => carrier === 'bearer' || carrier === 'basic' || carrier === 'grpc-authorization');
  return { address: request.ip, token, authorization: carriesAuthorization ? header('authorization') : undefined };
}

const CONSUL: readonly CredentialCarrier[] = ['x-consul-token', 'bearer', 'query-token'];
const NACOS: readonly CredentialCarrier[] = ['nacos-access-token', 'bearer'];
/** Requests as fastify hands them over: a few client addresses, headers and a parsed query. */
const anonymous: HttpRequestFacts[] = Array.from({ length: 8 }, (_, i) => ({ ip: `10.0.0.${i + 1}`, headers: { host: 'registry:8500', accept: '*/*' }, query: { index: '12' } }));
const bearer: HttpRequestFacts[] = anonymous.map((request) => ({ ...request, headers: { ...request.headers, authorization: 'Bearer 0123456789abcdef0123' } }));

const CALLS = 200_000;
const ROUNDS = 5;
let sink = 0;

function measure(read: (request: HttpRequestFacts, carriers: readonly CredentialCarrier[]) => PresentedCredentials, requests: HttpRequestFacts[], carriers: readonly CredentialCarrier[]): { ns: number; bytes: number } {
  for (let i = 0; i < CALLS; i++) sink += read(requests[i & 7]!, carriers).address.length;
  const ns: number[] = [];
  const bytes: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    gc!();
    const heapBefore = process.memoryUsage().heapUsed;
    const startedNs = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) sink += read(requests[i & 7]!, carriers).address.length;
    const elapsedNs = Number(process.hrtime.bigint() - startedNs);
    bytes.push((process.memoryUsage().heapUsed - heapBefore) / CALLS);
    ns.push(elapsedNs / CALLS);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return { ns: median(ns), bytes: Math.max(0, median(bytes)) };
}

const rows: string[] = ['| request | carriers | before: ns / B per call | now: ns / B per call |', '| --- | --- | --- | --- |'];
for (const [what, requests] of [['no credential', anonymous], ['Authorization: Bearer', bearer]] as const) {
  for (const [name, carriers] of [['Consul', CONSUL], ['Nacos', NACOS]] as const) {
    const before = measure(REFERENCE, requests, carriers);
    const now = measure(httpCredentials, requests, carriers);
    rows.push(`| ${what} | ${name} | ${before.ns.toFixed(0)} ns / ${before.bytes.toFixed(0)} B | ${now.ns.toFixed(0)} ns / ${now.bytes.toFixed(0)} B |`);
  }
}
console.log(rows.join('\n'));
console.log(`(median of ${ROUNDS} rounds of ${CALLS.toLocaleString('en')} calls each, after a warm-up round; node ${process.version}; checksum ${sink % 997})`);
