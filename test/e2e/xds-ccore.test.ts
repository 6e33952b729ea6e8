import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { waitFor } from '../support/process.js';
import { RealCluster } from '../support/real-cluster.js';
import { startGreeter, xdsPortOf, type GreeterServer } from '../support/xds.js';

/**
 * A real gRPC C-core xDS client: Debian 12's python3-grpcio 1.51 (/usr/bin/python3, not a
 * pyenv python on PATH), which dies with SIGSEGV on its first call when sent a RING_HASH
 * Cluster (grpc/grpc#31766, fixed in gRPC 1.52; issue 35). The registry sends it ROUND_ROBIN
 * (`xds.lbPolicy: auto`, src/xds/client-policy.ts): its calls spread over the instances, a
 * cancel is followed, a new instance gets calls, and the client process never crashes.
 */

const PYTHON = '/usr/bin/python3';
const CLIENT = join(dirname(fileURLToPath(import.meta.url)), 'xds_ccore_client.py');
const probe = spawnSync(PYTHON, ['-c', 'import grpc; print(grpc.__version__)'], { encoding: 'utf8' });
const grpcVersion = probe.status === 0 ? probe.stdout.trim() : null;
if (grpcVersion === null) {
  console.warn(`xds-ccore: skipped: ${PYTHON} cannot import grpc (apt-get install python3-grpcio): ${probe.error?.message ?? probe.stderr}`);
}

interface CallLine {
  ms: number;
  name?: string;
  error?: string;
}

let cluster: RealCluster;
let dir: string;
const greeters: GreeterServer[] = [];
let client: ChildProcess | undefined;
const calls: CallLine[] = [];
let stderr = '';
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

async function register(greeter: GreeterServer): Promise<void> {
  const { status } = await callJson('POST', `${cluster.url('peer-a')}/v1/instances`, {
    service: 'greeter',
    host: '127.0.0.1',
    port: greeter.port,
    instanceId: greeter.name,
    leaseDurationMs: 300_000,
  });
  expect(status).toBe(201);
}

/** The names that answered the calls made since `fromMs`. */
const namesSince = (fromMs: number) => calls.filter((call) => call.ms >= fromMs && call.name !== undefined).map((call) => call.name!);

/** Fails at once, with its stderr, when the client process ended (a crash shows here first). */
function clientAlive(): void {
  if (client && (client.exitCode !== null || client.signalCode !== null)) {
    throw new Error(`the C-core client ended: code ${client.exitCode}, signal ${client.signalCode}\nstderr: ${stderr.slice(-2_000)}`);
  }
}

describe.skipIf(grpcVersion === null)(`gRPC C-core ${grpcVersion ?? ''} (${PYTHON}) resolving xds:///greeter through the registry`, () => {
  beforeAll(async () => {
    cluster = await RealCluster.start({ size: 1, file: { xds: { port: 0 } } });
    dir = await mkdtemp(join(tmpdir(), 'registry-xds-ccore-'));
    for (const name of ['c1', 'c2', 'c3']) greeters.push(await startGreeter(name));
    await register(greeters[0]!);
    await register(greeters[1]!);
    const port = await xdsPortOf(cluster.peers.get('peer-a')!);
    const bootstrap = {
      xds_servers: [{ server_uri: `127.0.0.1:${port}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
      node: { id: 'e2e-ccore', cluster: 'e2e', locality: {} },
    };
    await writeFile(join(dir, 'bootstrap.json'), JSON.stringify(bootstrap));
    const child = spawn(PYTHON, [CLIENT, 'xds:///greeter', join(dir, 'stop'), '150'], {
      env: { ...process.env, GRPC_XDS_BOOTSTRAP: join(dir, 'bootstrap.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    client = child;
    exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    let pending = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) if (line.trim() !== '') calls.push(JSON.parse(line) as CallLine);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-20_000);
    });
  }, 150_000);

  afterAll(async () => {
    if (client && client.exitCode === null && client.signalCode === null) client.kill('SIGKILL');
    for (const greeter of greeters) greeter.close();
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('spreads its calls over both instances (no crash on the first call)', async () => {
    await waitFor(() => (clientAlive(), new Set(namesSince(0)).size === 2), 60_000, 'both greeters to take calls');
    const fromMs = Date.now();
    await waitFor(() => (clientAlive(), namesSince(fromMs).length >= 200), 60_000, '200 more calls');
    const names = namesSince(fromMs);
    const c1Share = names.filter((name) => name === 'c1').length / names.length;
    // round_robin: the two take turns.
    expect(c1Share).toBeGreaterThan(0.3);
    expect(c1Share).toBeLessThan(0.7);
  }, 150_000);

  it('follows a cancel: every call goes to the other instance', async () => {
    const { status } = await callJson('DELETE', `${cluster.url('peer-a')}/v1/services/greeter/instances/c1`);
    expect(status).toBe(200);
    const cancelledAtMs = Date.now();
    // Room for a loaded machine: from 2 s after the cancel, 100 calls and none to c1.
    await waitFor(() => (clientAlive(), namesSince(cancelledAtMs + 2_000).length >= 100), 60_000, '100 calls from 2 s after the cancel');
    expect(new Set(namesSince(cancelledAtMs + 2_000))).toEqual(new Set(['c2']));
  }, 90_000);

  it('sends calls to a new instance, and ends cleanly', async () => {
    await register(greeters[2]!);
    const registeredAtMs = Date.now();
    await waitFor(() => (clientAlive(), namesSince(registeredAtMs).includes('c3')), 30_000, 'c3 to take calls');
    await writeFile(join(dir, 'stop'), '');
    const { code, signal } = await exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(calls.filter((call) => call.name !== undefined).length).toBeGreaterThan(300);
    // The peer saw no NACK: the client took every resource it was sent.
    expect(cluster.peers.get('peer-a')!.logs.filter((entry) => String(entry.msg).includes('NACK'))).toEqual([]);
  }, 60_000);
});
