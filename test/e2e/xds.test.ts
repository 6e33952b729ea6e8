import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { greeterClient, startGreeter, xdsPortOf, type GreeterServer } from '../support/xds.js';
import { callJson } from '../support/http.js';
import { waitFor } from '../support/process.js';
import { RealCluster } from '../support/real-cluster.js';

/**
 * The real proxyless gRPC client, @grpc/grpc-js-xds, resolving `xds:///greeter` through the
 * registry: two peers, each serving xDS; the client's bootstrap names both in one server URI
 * (`ipv4:A,B`: grpc-js-xds 1.14 uses only the first `xds_servers` entry, and its channel to
 * that URI fails over between the addresses listed). In its own file: grpc-js-xds registers
 * process-wide resolvers and reads its bootstrap once per process.
 */

const require = createRequire(import.meta.url);
let cluster: RealCluster;
let dir: string;
const greeters: GreeterServer[] = [];
let client: ReturnType<typeof greeterClient> | undefined;

/**
 * One call through the xDS client, made on first use: each test sets up what it needs itself
 * (it may run alone, or after a test that failed half-way), the client included.
 */
function hello(): Promise<string> {
  client ??= greeterClient('xds:///greeter');
  return client.hello();
}

/** Registers an instance, or registers it again (200): a test states what it needs, whatever ran before. */
async function register(peer: string, greeter: GreeterServer, weight: number): Promise<void> {
  const { status } = await callJson('POST', `${cluster.url(peer)}/v1/instances`, {
    service: 'greeter',
    host: '127.0.0.1',
    port: greeter.port,
    instanceId: greeter.name,
    weight,
    leaseDurationMs: 300_000,
  });
  expect([200, 201]).toContain(status);
}

/** Cancels an instance, if it is there (404 when a test before never registered it). */
async function cancel(peer: string, greeter: GreeterServer): Promise<void> {
  const { status } = await callJson('DELETE', `${cluster.url(peer)}/v1/services/greeter/instances/${greeter.name}`);
  expect([200, 404]).toContain(status);
}

/** Until the client's calls reach exactly these greeters (the registry's state has reached it). */
async function untilServedBy(names: string[], timeoutMs = 20_000): Promise<void> {
  const wanted = [...names].sort().join(',');
  // A call may fail while the client takes in a change (no endpoint yet): that is "not yet".
  const servedBy = async () => [...(await callMany(50)).keys()].sort().join(',');
  await waitFor(async () => (await servedBy().catch(() => '')) === wanted, timeoutMs, `calls to reach exactly ${wanted}`);
}

/** `count` calls, `parallel` at a time; answers how many each greeter took. */
async function callMany(count: number, parallel = 16): Promise<Map<string, number>> {
  const answers = new Map<string, number>();
  let started = 0;
  const worker = async () => {
    while (started < count) {
      started += 1;
      const name = await hello();
      answers.set(name, (answers.get(name) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return answers;
}

beforeAll(async () => {
  cluster = await RealCluster.start({ size: 2, file: { xds: { port: 0 } } });
  dir = await mkdtemp(join(tmpdir(), 'registry-xds-'));
  for (const name of ['g1', 'g2', 'g3', 'g4']) greeters.push(await startGreeter(name));
  const bootstrap = {
    xds_servers: [{ server_uri: `ipv4:127.0.0.1:${await xdsPortOf(cluster.peers.get('peer-a')!)},127.0.0.1:${await xdsPortOf(cluster.peers.get('peer-b')!)}`, channel_creds: [{ type: 'insecure' }], server_features: [] }],
    node: { id: 'e2e-client', cluster: 'e2e', locality: {} },
  };
  await writeFile(join(dir, 'bootstrap.json'), JSON.stringify(bootstrap));
  process.env.GRPC_XDS_BOOTSTRAP = join(dir, 'bootstrap.json');
  (require('@grpc/grpc-js-xds') as { register(): void }).register();
}, 150_000);

afterAll(async () => {
  client?.client.close();
  for (const greeter of greeters) greeter.close();
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a gRPC client resolving xds:///greeter through the registry', () => {
  it('balances 1,000 calls over both instances in proportion to their weights (ring_hash)', async () => {
    const [g1, g2] = greeters as [GreeterServer, GreeterServer];
    await register('peer-a', g1, 1);
    await register('peer-a', g2, 2);
    // The first calls wait for the client's xDS resources; once both answer, count afresh.
    await untilServedBy(['g1', 'g2']);
    const first = await callMany(1_000);
    expect([...first.keys()].sort()).toEqual(['g1', 'g2']);
    // Weighted random picks are noisy: 3,000 more calls keep a 10% band around the expected
    // shares (1/3, 2/3) beyond chance (about 3 standard deviations, ring and sampling noise together).
    const more = await callMany(3_000);
    const g1Share = ((first.get('g1') ?? 0) + (more.get('g1') ?? 0)) / 4_000;
    expect(g1Share).toBeGreaterThan((1 / 3) * 0.9);
    expect(g1Share).toBeLessThan((1 / 3) * 1.1);
  }, 120_000);

  it('sends every call to the other instance within 2 s of a cancel', async () => {
    const [g1, g2] = greeters as [GreeterServer, GreeterServer];
    await register('peer-a', g1, 1);
    await register('peer-a', g2, 2);
    await untilServedBy(['g1', 'g2']);
    const { status } = await callJson('DELETE', `${cluster.url('peer-a')}/v1/services/greeter/instances/g1`);
    expect(status).toBe(200);
    const cancelledAtMs = Date.now();
    const late: string[] = [];
    // From 2 s on (room for a loaded machine; the push itself is one coalescing window), for 2 s.
    while (Date.now() - cancelledAtMs < 4_000) {
      const calledAtMs = Date.now();
      const name = await hello();
      if (calledAtMs - cancelledAtMs >= 2_000) late.push(name);
    }
    expect(late.length).toBeGreaterThan(20);
    expect(new Set(late)).toEqual(new Set(['g2']));
  });

  it('routes calls to a third instance registered on the other peer', async () => {
    await cancel('peer-a', greeters[0]!);
    await register('peer-a', greeters[1]!, 2);
    await untilServedBy(['g2']);
    await register('peer-b', greeters[2]!, 2);
    await waitFor(async () => (await callMany(50)).has('g3'), 10_000, 'g3 to take calls');
    const answers = await callMany(500);
    expect([...answers.keys()].sort()).toEqual(['g2', 'g3']);
  });

  it('keeps working when the peer it talks to stops, and follows changes through the other', async () => {
    await cancel('peer-a', greeters[0]!);
    await register('peer-a', greeters[1]!, 2);
    await register('peer-b', greeters[2]!, 2);
    await untilServedBy(['g2', 'g3']);
    await cluster.kill('peer-a');
    // What the client holds keeps serving calls while it reconnects.
    const answers = await callMany(200);
    expect([...answers.keys()].sort()).toEqual(['g2', 'g3']);
    // Its ADS stream comes back on peer-b, which pushes what changes there.
    await register('peer-b', greeters[3]!, 2);
    await waitFor(async () => (await callMany(50)).has('g4'), 20_000, 'g4 (registered on peer-b) to take calls');
  });
});
