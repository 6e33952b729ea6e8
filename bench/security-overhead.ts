/**
 * What the guards cost per request, in process (app.inject on a fake clock, no socket), each
 * against a reference measured in the same run:
 *   1. a read (GET /v1/services/orders, 20 instances) with a bearer token and the rate limit,
 *      against the same read on an open peer (dev mode);
 *   2. a signed replication batch (100 records) against the same batch unsigned on an open peer;
 *   3. the checks alone, without HTTP: a token lookup among 100 tokens, and signing plus
 *      verifying a 30 KB body, against hashing the same body once (the least a signature costs).
 *
 *   npx tsx bench/security-overhead.ts [--quick]
 *
 * Bounded: a fixed number of requests per measurement.
 */
import { sha256Hex as tokenDigest } from '../src/config/security.js';
import { buildServer } from '../src/http/server.js';
import { sha256Hex, signature, verifySignature } from '../src/security/peer-signature.js';
import { TokenTable } from '../src/security/tokens.js';
import { createTestNode } from '../test/support/node.js';
import { record } from '../test/support/records.js';
import { bearer, peerHeaders, securedFile, TOKENS } from '../test/support/security.js';
import { progress, quick, round } from './lib.js';

const ROUNDS = quick ? 5 : 15;
const REQUESTS = quick ? 500 : 2_000;
const BATCHES = quick ? 50 : 200;

async function server(secured: boolean) {
  const file = secured ? securedFile({ limits: { rateLimitPerSecond: 1_000_000, rateLimitBurst: 10_000_000 } }) : { limits: { rateLimitPerSecond: 0 } };
  const testNode = await createTestNode({ file });
  const app = await buildServer({ node: testNode.node });
  await app.ready();
  for (let i = 0; i < 20; i++) {
    await app.inject({
      method: 'POST',
      url: '/v1/instances?namespace=team-a',
      headers: secured ? bearer(TOKENS.root) : {},
      payload: { service: 'orders', host: '10.0.0.5', port: 8000 + i, leaseDurationMs: 600_000 },
    });
  }
  return { ...testNode, app };
}

let sequence = 0;
async function timeMs(count: number, run: (i: number) => Promise<number>): Promise<number> {
  const startedMs = performance.now();
  for (let i = 0; i < count; i++) {
    const status = await run(sequence++);
    if (status !== 200) throw new Error(`answered ${status}`);
  }
  return performance.now() - startedMs;
}

/** Median per-call time of `a` and `b`, measured in alternating rounds (the machine's noise hits both alike). */
async function compare(count: number, a: (i: number) => Promise<number>, b: (i: number) => Promise<number>): Promise<[number, number]> {
  const timesA: number[] = [];
  const timesB: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    timesA.push((await timeMs(count, a)) / count);
    timesB.push((await timeMs(count, b)) / count);
  }
  const median = (values: number[]) => values.sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
  return [median(timesA), median(timesB)];
}

async function main(): Promise<void> {
  const open = await server(false);
  const guarded = await server(true);
  const read = (target: typeof open, headers: Record<string, string>) => async () =>
    (await target.app.inject({ url: '/v1/services/orders?namespace=team-a', headers })).statusCode;
  // Warm up both.
  await timeMs(500, read(open, {}));
  await timeMs(500, read(guarded, bearer(TOKENS.reader)));
  const [openReadMs, guardedReadMs] = await compare(REQUESTS, read(open, {}), read(guarded, bearer(TOKENS.reader)));
  progress(`read (median of ${ROUNDS} rounds): open ${round(openReadMs * 1_000)} us, with token ${round(guardedReadMs * 1_000)} us per request -> ratio ${round(guardedReadMs / openReadMs, 2)}x`);

  const batch = (target: typeof open, i: number) =>
    JSON.stringify({
      from: 'peer-x',
      records: Array.from({ length: 100 }, (_, j) => ({
        ...record({ wallMs: target.clock.nowMs() + i, counter: j, peerId: 'peer-x', instanceId: `r-${i}-${j}`, namespace: 'team-a' }),
        leaseRemainingMs: 60_000,
      })),
    });
  const replicate = (target: typeof open, signed: boolean) => async (i: number) => {
    const body = batch(target, i);
    const headers = { 'content-type': 'application/json', ...(signed ? peerHeaders(body, { path: '/v1/peer/replicate', nowMs: target.clock.nowMs() }) : {}) };
    return (await target.app.inject({ method: 'POST', url: '/v1/peer/replicate', headers, payload: body })).statusCode;
  };
  const [unsignedMs, signedMs] = await compare(BATCHES, replicate(open, false), replicate(guarded, true));
  progress(`replicate 100 new records (median of ${ROUNDS} rounds): unsigned ${round(unsignedMs, 2)} ms, signed ${round(signedMs, 2)} ms per batch (signing included) -> ratio ${round(signedMs / unsignedMs, 2)}x`);
  await open.app.close();
  await guarded.app.close();

  const tokens = new TokenTable(
    Array.from({ length: 100 }, (_, i) => ({ name: `t${i}`, sha256: tokenDigest(`token-number-${i}-of-a-hundred`), namespaces: '*' as const, scopes: ['read' as const] })),
  );
  const loops = quick ? 20_000 : 200_000;
  let startedMs = performance.now();
  for (let i = 0; i < loops; i++) if (!tokens.authenticate(`token-number-${i % 100}-of-a-hundred`)) throw new Error('no match');
  const lookupUs = ((performance.now() - startedMs) * 1_000) / loops;
  const body = batch(open, 0);
  const secret = 'x'.repeat(64);
  startedMs = performance.now();
  for (let i = 0; i < loops / 10; i++) sha256Hex(body);
  const hashUs = ((performance.now() - startedMs) * 10_000) / loops;
  startedMs = performance.now();
  for (let i = 0; i < loops / 10; i++) {
    const parts = { method: 'POST', path: '/v1/peer/replicate', timestampMs: i, nonce: 'AAAAAAAAAAAAAAAAAAAAAA', peerId: 'peer-a', bodySha256: sha256Hex(body) };
    const signed = signature(secret, parts);
    if (!verifySignature(secret, { ...parts, bodySha256: sha256Hex(body) }, signed)) throw new Error('bad signature');
  }
  const signUs = ((performance.now() - startedMs) * 10_000) / loops;
  progress(`checks alone: token lookup among 100 tokens ${round(lookupUs, 2)} us; sign + verify a ${round(body.length / 1_024)} KB body ${round(signUs)} us, against one SHA-256 of it ${round(hashUs)} us -> ratio ${round(signUs / hashUs, 2)}x`);
}

void main();
