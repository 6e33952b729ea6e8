import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { signedHeaders } from '../../src/security/peer-signature.js';
import { callJson } from '../support/http.js';
import { RealCluster } from '../support/real-cluster.js';
import { projectRoot, runPeerToExit, startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';
import { bearer, CLUSTER_SECRET, securedFile, TOKENS } from '../support/security.js';

let cluster: RealCluster | undefined;
const started: PeerProcess[] = [];
const servers: Server[] = [];
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
  for (const peer of started.splice(0)) peer.kill('SIGKILL');
  for (const server of servers.splice(0)) server.close();
});

describe('peers that sign their calls, clients with tokens, over real HTTP', () => {
  it('replicate through signed calls, and refuse unsigned, forged and client-token peer calls', async () => {
    cluster = await RealCluster.start({ size: 2, file: securedFile({ limits: { rateLimitPerSecond: 1_000 } }) });
    const [a, b] = cluster.ids.map((id) => cluster!.url(id)) as [string, string];
    const body = { service: 'orders', host: '127.0.0.1', port: 9000, instanceId: 'one', namespace: 'team-a', leaseDurationMs: 60_000 };
    expect((await callJson('POST', `${a}/v1/instances`, body)).status).toBe(401);
    expect((await callJson('POST', `${a}/v1/instances`, body, bearer(TOKENS.reader))).status).toBe(403);
    expect((await callJson('POST', `${a}/v1/instances`, body, bearer(TOKENS.writer))).status).toBe(201);
    const listed = async () => (await callJson('GET', `${b}/v1/services/orders?namespace=team-a`, undefined, bearer(TOKENS.reader))).body.instances?.length;
    await waitFor(async () => (await listed()) === 1, 15_000, 'peer-b to list the register made on peer-a');
    const status = await cluster.statusWithAllUp(cluster.ids[0]!, bearer(TOKENS.admin));
    expect(status.peers.map((p: { state: string }) => p.state)).toEqual(['up']);
    expect(status.peers[0].replication.failures.permanent).toBe(0);

    const ping = JSON.stringify({ from: { id: 'intruder', url: 'http://127.0.0.1:9', region: 'r', zone: '' }, members: [] });
    const call = async (headers: Record<string, string>) => {
      const response = await request(`${b}/v1/peer/ping`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: ping });
      await response.body.dump();
      return response.statusCode;
    };
    const sign = (secret: string) => signedHeaders(secret, { method: 'POST', path: '/v1/peer/ping', peerId: 'intruder', body: ping, nowMs: Date.now() });
    expect(await call({})).toBe(401);
    expect(await call(bearer(TOKENS.root))).toBe(401);
    expect(await call(sign('a-different-secret-of-enough-length-0000'))).toBe(401);
    const honest = sign(CLUSTER_SECRET);
    expect(await call(honest)).toBe(200);
    expect(await call(honest)).toBe(401);
    const members = (await callJson('GET', `${b}/v1/cluster`, undefined, bearer(TOKENS.admin))).body.peers.map((p: { id: string }) => p.id);
    expect(members).toContain('intruder');
  }, 60_000);
});

describe('safe by default at start', () => {
  it('refuses a non-loopback address without authentication, naming what is missing (exit 2)', async () => {
    const open = await runPeerToExit(['--host', '0.0.0.0', '--port', '0']);
    expect(open.code).toBe(2);
    expect(open.stderr).toContain('registry: refusing to listen on 0.0.0.0: the client routes are open');
    expect(open.stderr).toContain('--insecure');
    const tokensOnly = await runPeerToExit(['--host', '0.0.0.0', '--port', '0'], {
      REGISTRY_TOKENS: JSON.stringify([{ name: 'ci', token: TOKENS.root, namespaces: ['*'], scopes: ['read'] }]),
    });
    expect(tokensOnly.code).toBe(2);
    expect(tokensOnly.stderr).toMatch(/refusing to listen on 0\.0\.0\.0: the peer routes are open/);
    expect(tokensOnly.stderr).not.toContain(TOKENS.root);
  });

  it('with --insecure gets past the refusal and warns (the port is taken here, so it never serves)', async () => {
    // Hold the port on 127.0.0.1: binding 0.0.0.0 then fails, so nothing listens on every interface.
    const holder = createServer();
    servers.push(holder);
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = String((holder.address() as { port: number }).port);
    for (const [args, env] of [
      [['--host', '0.0.0.0', '--port', port, '--insecure'], {}],
      [['--host', '0.0.0.0', '--port', port], { REGISTRY_INSECURE: 'true' }],
    ] as const) {
      const result = await runPeerToExit([...args], { ...env });
      const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as { level: number; msg: string });
      expect(lines[0]).toMatchObject({ level: 40, msg: expect.stringMatching(/^--insecure: listening on 0\.0\.0\.0 while the client routes are open/) });
      expect(lines.map((line) => line.msg)).toContain('cannot listen');
      expect(result.code).toBe(2);
    }
  });

  it('runs open on 127.0.0.1 with exactly one warning line', async () => {
    const peer = await startPeerProcess(['--port', '0', '--profile', 'local']);
    started.push(peer);
    const warnings = peer.logs.filter((line) => line.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/^dev mode: no authentication on 127\.0\.0\.1/);
    // The Docker health check, over plain HTTP here.
    const probe = spawnSync(process.execPath, [join(projectRoot, 'dist/cli/healthcheck.js')], {
      env: { ...process.env, REGISTRY_PORT: new URL(peer.url).port },
      timeout: 10_000,
    });
    expect(probe.status).toBe(0);
  });
});

describe('slow clients cannot hold sockets', () => {
  it('cuts a client that never finishes its headers, and an idle keep-alive socket', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'registry-timeouts-'));
    try {
      const file = join(dir, 'limits.json');
      await writeFile(file, JSON.stringify({ limits: { headersTimeoutMs: 1_000, requestTimeoutMs: 1_500, keepAliveTimeoutMs: 500 } }));
      const peer = await startPeerProcess(['--port', '0', '--config', file]);
      started.push(peer);
      const { hostname, port } = new URL(peer.url);
      const closedAfterMs = (payload: string) =>
        new Promise<{ ms: number; answer: string }>((resolve) => {
          const startedMs = Date.now();
          let answer = '';
          const socket = connect(Number(port), hostname, () => socket.write(payload));
          socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
          socket.on('close', () => resolve({ ms: Date.now() - startedMs, answer }));
          socket.on('error', () => {});
        });
      // Headers never finished: 408 and closed within the headers timeout (checked every second).
      const partial = await closedAfterMs('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      expect(partial.answer).toMatch(/^HTTP\/1\.1 408/);
      expect(partial.ms).toBeLessThan(5_000);
      // A finished request on a keep-alive socket, then silence: closed after the keep-alive timeout.
      const idle = await closedAfterMs('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
      expect(idle.answer).toMatch(/^HTTP\/1\.1 200/);
      expect(idle.ms).toBeLessThan(5_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
