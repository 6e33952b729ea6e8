import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { runPeerToExit, startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

const started: PeerProcess[] = [];
afterEach(() => {
  for (const peer of started.splice(0)) peer.kill('SIGKILL');
});


describe('one peer as a real process', () => {
  it('serves the client API over HTTP and stops cleanly on SIGTERM', async () => {
    const peer = await startPeerProcess(['--port', '0', '--host', '127.0.0.1', '--profile', 'local']);
    started.push(peer);
    expect((await callJson('GET', `${peer.url}/readyz`)).status).toBe(200);

    const registered = await callJson('POST', `${peer.url}/v1/instances`, {
      service: 'orders',
      host: '127.0.0.1',
      port: 9001,
      leaseDurationMs: 3_000, // 1 s could run out between two calls on a loaded machine
    });
    expect(registered.status).toBe(201);
    expect((await callJson('PUT', `${peer.url}/v1/services/orders/instances/127.0.0.1:9001/heartbeat`)).status).toBe(200);
    expect((await callJson('GET', `${peer.url}/v1/services/orders`)).body.instances).toHaveLength(1);

    // No more heartbeats: the reaper evicts it once its 3 s lease has run out.
    await waitFor(
      async () => (await callJson('GET', `${peer.url}/v1/services/orders/instances/127.0.0.1:9001`)).status === 404,
      10_000,
      'the eviction',
    );
    // The log line travels through a pipe: it may arrive just after the answer.
    await waitFor(() => peer.logs.some((line) => line.msg === 'instance evicted'), 5_000, 'the eviction log line');
    expect((await callJson('PUT', `${peer.url}/v1/services/orders/instances/127.0.0.1:9001/heartbeat`)).status).toBe(404);

    const bad = await callJson('POST', `${peer.url}/v1/instances`, { service: 'orders', host: 'x y', port: 1 });
    expect(bad).toEqual({ status: 400, body: { code: 'REG_ERR_VALIDATION', message: 'host: must be a host name or an IP address' } });

    peer.kill('SIGTERM');
    expect(await peer.exited).toBe(0);
    expect(peer.logs.map((line) => line.msg)).toContain('stopped');
  });

  it('exits with code 2 and names the field for a bad configuration', async () => {
    const result = await runPeerToExit(['--port', 'http'], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--port: must be an integer from 0 to 65535');
    const fromEnv = await runPeerToExit([], { REGISTRY_LOG_LEVEL: 'chatty' });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('REGISTRY_LOG_LEVEL: must be one of');
  });
});

describe('a peer that cannot start', () => {
  const holders: Server[] = [];
  afterEach(() => {
    for (const holder of holders.splice(0)) holder.close();
  });

  /** Exit 2 and exactly one readable `registry: ...` line on standard error, no stack trace anywhere. */
  const expectOneLine = (result: { code: number | null; stderr: string; stdout: string }): string => {
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^registry: /);
    // Neither a stack trace on standard error nor one inside a JSON log line.
    expect(result.stderr + result.stdout).not.toMatch(/(\n|\\n)\s+at /);
    return lines[0]!;
  };

  it('says which port is in use and which flag chooses another', async () => {
    const holder = createServer();
    holders.push(holder);
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const line = expectOneLine(await runPeerToExit(['--port', String(port), '--host', '127.0.0.1']));
    expect(line).toBe(
      `registry: cannot listen on 127.0.0.1:${port} (the HTTP API): the port is already in use (by another peer, or another program); stop that one, or choose another port with --port (REGISTRY_PORT, or \`port\` in the config file; a peer listed in the file takes its port from its \`url\`)`,
    );
  });

  it.each([
    ['--consul-port', 'the Consul listener'],
    ['--xds-port', 'the xDS listener'],
    ['--dns-port', 'the DNS listener'],
  ])('says which protocol port is in use (%s) and which flag chooses another', async (flag, what) => {
    const holder = createServer();
    holders.push(holder);
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const line = expectOneLine(await runPeerToExit(['--port', '0', '--host', '127.0.0.1', flag, String(port)]));
    expect(line).toContain(`registry: cannot listen on 127.0.0.1:${port} (${what}): the port is already in use`);
    expect(line).toContain(`choose another port with ${flag}`);
  });

  it('refuses an --id the cluster file does not list, naming the ids it has', async () => {
    const line = expectOneLine(await runPeerToExit(['--config', 'cluster.example.json', '--id', 'peer-z']));
    expect(line).toBe(
      'registry: bad configuration: --id: peer-z is not one of the peers in the cluster file (peer-a, peer-b, peer-c); pass one of them, or, to join the cluster as a new peer, give its own address too with --port or --url',
    );
  });

  it('names TLS files that are not a certificate and key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'registry-e2e-tls-'));
    try {
      writeFileSync(join(dir, 'peer.crt'), 'not a certificate\n');
      writeFileSync(join(dir, 'peer.key'), 'not a key\n');
      const line = expectOneLine(
        await runPeerToExit(['--port', '0', '--host', '127.0.0.1', '--tls-cert', join(dir, 'peer.crt'), '--tls-key', join(dir, 'peer.key'), '--url', 'https://127.0.0.1:1']),
      );
      expect(line).toMatch(new RegExp(`^registry: bad TLS files \\(--tls-cert ${join(dir, 'peer.crt')}, --tls-key ${join(dir, 'peer.key')}\\): .*PEM.*; they must be PEM, and the key must belong to the certificate$`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a data dir it cannot use', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'registry-e2e-datadir-'));
    try {
      writeFileSync(join(dir, 'a-file'), 'not a directory');
      const line = expectOneLine(await runPeerToExit(['--port', '0', '--host', '127.0.0.1', '--data-dir', join(dir, 'a-file', 'data')]));
      expect(line).toContain(`registry: cannot use the data dir ${join(dir, 'a-file', 'data')}: cannot create the data dir: a path component is not a directory (ENOTDIR)`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
