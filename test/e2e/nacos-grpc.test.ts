import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NacosNamingClient, type NacosServiceInstance } from 'nacos-sdk-rust-binding-node';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { freePort } from '../support/fault-proxy.js';
import { nacosPortsOf } from '../support/nacos-process.js';
import { retryWhenPortTaken } from '../support/ports.js';
import { projectRoot, startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/**
 * nacos-sdk-rust-binding-node 0.8.0 (the Rust nacos-sdk: Nacos 2.x over gRPC, at the HTTP port
 * + 1000) against one peer with short leases: register, subscribe and be notified, select,
 * deregister; and a client process killed: its instances leave by the lease rules.
 */
const LEASE_MS = 3_000;
let peer: PeerProcess;
let nacosPort: number;
let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nacos-grpc-'));
  const config = join(dir, 'peer.json');
  writeFileSync(config, JSON.stringify({ cluster: { leaseDurationMs: LEASE_MS, heartbeatIntervalMs: 1_000, evictionIntervalMs: 200 } }));
  peer = await retryWhenPortTaken(async () => {
    let port = await freePort();
    while (port > 64_000) port = await freePort();
    nacosPort = port;
    return startPeerProcess(['--config', config, '--port', '0', '--nacos-port', String(port)]);
  });
  const ports = await nacosPortsOf(peer);
  expect(ports).toEqual({ port: nacosPort, grpcPort: nacosPort + 1_000 });
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  peer?.kill();
  await peer?.exited;
  rmSync(dir, { recursive: true, force: true });
});

async function nativeInstances(service: string): Promise<{ instanceId: string; status: string }[]> {
  const response = await request(`${peer.url}/v1/services/${service}`);
  return ((await response.body.json()) as { instances: { instanceId: string; status: string }[] }).instances;
}

function newClient(): NacosNamingClient {
  return new NacosNamingClient({ serverAddr: `127.0.0.1:${nacosPort}`, namespace: '' });
}

describe('nacos-sdk-rust-binding-node 0.8.0 (Nacos 2.x gRPC)', () => {
  it('registers, is notified of changes, selects instances and deregisters', async () => {
    const client = newClient();
    const instance: NacosServiceInstance = { ip: '127.0.0.1', port: 9201, weight: 3, metadata: { lang: 'rust' } };
    await client.registerInstance('rust-e2e', 'DEFAULT_GROUP', instance);
    await waitFor(async () => (await nativeInstances('rust-e2e')).length === 1, 20_000, 'the instance in /v1');
    const seen: NacosServiceInstance[][] = [];
    await client.subscribe('rust-e2e', 'DEFAULT_GROUP', [], (error, instances) => {
      if (!error) seen.push(instances);
    });
    await waitFor(() => seen.some((list) => list.length === 1), 20_000, 'the subscription callback');

    // Another instance, registered through the native API: the Rust client is notified by push.
    expect((await callJson('POST', `${peer.url}/v1/instances`, { service: 'rust-e2e', host: '127.0.0.1', port: 9202, leaseDurationMs: 60_000 })).status).toBe(201);
    await waitFor(() => seen.at(-1)?.length === 2, 10_000, 'a notification with both instances');

    const all = await client.getAllInstances('rust-e2e', 'DEFAULT_GROUP');
    expect(all.map((item) => item.port).sort()).toEqual([9201, 9202]);
    const healthy = await client.selectInstances('rust-e2e', 'DEFAULT_GROUP', [], true, true);
    expect(healthy.find((item) => item.port === 9201)).toMatchObject({ ip: '127.0.0.1', weight: 3, healthy: true, metadata: { lang: 'rust' } });

    // The connection keeps the instance past its lease: no heartbeat but the connection's.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 1_000));
    expect((await nativeInstances('rust-e2e')).map((item) => item.instanceId)).toContain('127.0.0.1:9201');

    await client.deregisterInstance('rust-e2e', 'DEFAULT_GROUP', instance);
    await waitFor(async () => (await nativeInstances('rust-e2e')).length === 1, 10_000, 'the deregistered instance to leave');
    await waitFor(() => seen.at(-1)?.length === 1 && seen.at(-1)![0]!.port === 9202, 10_000, 'a notification without it');
  }, 90_000);

  it('lets the instances of a killed client process leave by the lease rules', async () => {
    // The client runs in a process of its own, killed with SIGKILL: no deregister, the TCP connection just ends.
    const script = `
      const { NacosNamingClient } = require('nacos-sdk-rust-binding-node');
      const client = new NacosNamingClient({ serverAddr: '127.0.0.1:${nacosPort}', namespace: '' });
      client.registerInstance('rust-killed', 'DEFAULT_GROUP', { ip: '127.0.0.1', port: 9301 })
        .then(() => console.log('registered'), (error) => { console.error(String(error)); process.exit(1); });
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['-e', script], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor(() => output.includes('registered'), 30_000, `the child client to register (${output.slice(-500)})`);
    await waitFor(async () => (await nativeInstances('rust-killed')).length === 1, 10_000, 'the instance');
    // Alive past two leases while its connection is open.
    await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS));
    expect(await nativeInstances('rust-killed')).toHaveLength(1);
    const killedAt = Date.now();
    child.kill('SIGKILL');
    await waitFor(async () => (await nativeInstances('rust-killed')).length === 0, 30_000, 'the instance to leave after its lease');
    const goneInMs = Date.now() - killedAt;
    // Not before its lease could have run out (the last renewal came at most one renewal interval before the kill).
    expect(goneInMs).toBeGreaterThan(LEASE_MS - 1_000);
  }, 90_000);
});
