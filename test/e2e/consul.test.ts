import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Consul from 'consul';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onFreshPorts } from '../support/ports.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/**
 * Real Consul clients against the Consul API of a real peer process on 127.0.0.1: the npm
 * `consul` client (2.0.1), Debian's python3-consul (run with /usr/bin/python3, where Debian
 * installs it), and the requests brpc's consul naming service makes, header for header.
 */
const PYTHON = '/usr/bin/python3';
const pythonScript = fileURLToPath(new URL('./consul_client.py', import.meta.url));
let peer: PeerProcess;
let nativeUrl: string;
let consulPort: number;

beforeAll(async () => {
  // The Consul port is chosen beforehand (its listener logs the port it was given), the HTTP
  // port by the peer. No known URL: the peer's start line, written once every listener is up,
  // tells when it is up, so that a Consul port taken meanwhile fails the start and a fresh one is tried.
  // Debian's python3-consul 0.7 deregisters and passes checks by GET: consul.allowGetWrites.
  const configDir = mkdtempSync(join(tmpdir(), 'registry-consul-'));
  const configFile = join(configDir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ consul: { allowGetWrites: true } }));
  peer = await onFreshPorts(1, async ([port]) => {
    consulPort = port!;
    return startPeerProcess(['--config', configFile, '--port', '0', '--consul-port', String(consulPort)]);
  });
  nativeUrl = peer.url;
  await waitFor(() => peer.logs.some((line) => line.msg === 'Consul API listening'), 60_000, 'the Consul listener'); // generous: it loads its modules after the peer is up
});

afterAll(async () => {
  peer?.kill();
  await peer?.exited;
});

/**
 * The client's register, with the fields Consul takes (its type declarations ask for a check
 * `name` and `timeout`, which a TTL check does not need; the client itself sends what it is given).
 */
function registerService(consul: Consul, service: Record<string, unknown>): Promise<unknown> {
  return consul.agent.service.register(service as never);
}

async function nativeInstances(service: string): Promise<{ instanceId: string; status: string }[]> {
  const response = await request(`${nativeUrl}/v1/services/${service}?status=all`);
  return ((await response.body.json()) as { instances: { instanceId: string; status: string }[] }).instances;
}

describe('npm consul 2.0.1', () => {
  it('registers with a TTL check, passes it, reads health.service passing, and a watch wakes within a second', async () => {
    const consul = new Consul({ host: '127.0.0.1', port: consulPort });
    await registerService(consul, { name: 'web', id: 'web-1', address: '127.0.0.1', port: 8080, tags: ['v1'], check: { ttl: '10s', deregistercriticalserviceafter: '1m' } });
    // A TTL check starts critical: not passing until the first pass.
    expect(await consul.health.service({ service: 'web', passing: true })).toEqual([]);
    await consul.agent.check.pass({ id: 'service:web-1', note: 'ok' });
    const entries = await consul.health.service({ service: 'web', passing: true });
    expect(entries.map((entry: { Service: { ID: string; Port: number; Tags: string[] } }) => [entry.Service.ID, entry.Service.Port, entry.Service.Tags])).toEqual([['web-1', 8080, ['v1']]]);
    // The same record through /v1.
    expect(await nativeInstances('web')).toMatchObject([{ instanceId: 'web-1', status: 'UP' }]);

    const watch = consul.watch({ method: consul.health.service, options: { service: 'web', passing: true } as never });
    const changes: { atMs: number; ids: string[] }[] = [];
    const errors: unknown[] = [];
    watch.on('change', (data: { Service: { ID: string } }[]) => changes.push({ atMs: performance.now(), ids: data.map((entry) => entry.Service.ID).sort() }));
    watch.on('error', (error: unknown) => errors.push(error));
    try {
      await waitFor(() => changes.length >= 1, 5_000, 'the first watch answer');
      // Wait until the watch is held as a blocking query, then change the service.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await registerService(consul, { name: 'web', id: 'web-2', address: '127.0.0.1', port: 8081, check: { ttl: '10s', status: 'passing' } });
      const writtenAtMs = performance.now();
      const woke = await waitFor(() => changes.find((change) => change.ids.length === 2), 5_000, 'the watch to see web-2');
      expect(woke.ids).toEqual(['web-1', 'web-2']);
      expect(woke.atMs - writtenAtMs).toBeLessThan(5_000); // woken by the change: the watch's blocking wait is 30 s
      expect(errors).toEqual([]);
    } finally {
      watch.end();
    }
    await consul.agent.check.fail({ id: 'service:web-2' });
    expect((await consul.health.service({ service: 'web', passing: true })).map((entry: { Service: { ID: string } }) => entry.Service.ID)).toEqual(['web-1']);
    expect(await nativeInstances('web')).toMatchObject([{ instanceId: 'web-1', status: 'UP' }, { instanceId: 'web-2', status: 'DOWN' }]);
    await consul.agent.service.deregister({ id: 'web-1' });
    await consul.agent.service.deregister({ id: 'web-2' });
    expect(await nativeInstances('web')).toEqual([]);
    consul.destroy();
  });

  it('sees /v1 registrations in the catalog, and leader/peers say who serves', async () => {
    const consul = new Consul({ host: '127.0.0.1', port: consulPort });
    const register = await request(`${nativeUrl}/v1/instances`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ service: 'native-api', host: '127.0.0.1', port: 7000, instanceId: 'api-1', metadata: { 'consul.tags': '["rest"]' } }),
    });
    expect(register.statusCode).toBe(201);
    await register.body.dump();
    expect(await consul.catalog.service.list()).toMatchObject({ 'native-api': ['rest'] });
    expect((await consul.catalog.service.nodes('native-api'))[0]).toMatchObject({ ServiceID: 'api-1', ServicePort: 7000 });
    expect(await consul.status.leader()).toBe(`127.0.0.1:${consulPort}`);
    expect(await consul.status.peers()).toEqual([`127.0.0.1:${consulPort}`]);
    consul.destroy();
  });
});

describe('Debian python3-consul', () => {
  it('registers, passes, reads with passing=True and wakes from a blocking query', async () => {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(PYTHON, [pythonScript, '127.0.0.1', String(consulPort)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve(stdout);
        else reject(new Error(`python exited ${code}: ${stderr}`));
      });
    });
    const result = JSON.parse(output.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(result.first).toEqual([['py-1', 9001, ['py']]]);
    expect(result.afterWake).toEqual(['py-1', 'py-2']);
    expect(Number(result.wokeIndex)).toBeGreaterThan(Number(result.index));
    expect(result.elapsedS).toBeLessThan(5);
    expect(result.agentServices).toEqual(expect.arrayContaining(['py-1', 'py-2']));
    expect(result.leader).toBe(`127.0.0.1:${consulPort}`);
    expect(await nativeInstances('pyweb')).toEqual([]);
  });
});

describe("brpc's consul naming service", () => {
  it('GET /v1/health/service/NAME?stale&passing, then &index=N&wait=60s blocks until a change; X-Consul-Index moves', async () => {
    const consul = new Consul({ host: '127.0.0.1', port: consulPort });
    await registerService(consul, { name: 'brpc-echo', id: 'echo-1', address: '127.0.0.1', port: 8001, tags: ['idc-a'], check: { ttl: '30s', status: 'passing' } });
    const base = `http://127.0.0.1:${consulPort}/v1/health/service/brpc-echo?stale&passing`;
    const first = await request(base);
    const index = first.headers['x-consul-index'];
    expect(typeof index === 'string' && /^\d+$/.test(index)).toBe(true);
    const body = (await first.body.json()) as { Service: { Address: unknown; Port: unknown; Tags: unknown } }[];
    // What brpc reads: Service.Address a string (an IP), Service.Port an unsigned integer, Tags an array whose first is a string.
    expect(body.map((entry) => [entry.Service.Address, entry.Service.Port, (entry.Service.Tags as string[])[0]])).toEqual([['127.0.0.1', 8001, 'idc-a']]);
    const blocked = request(`${base}&index=${String(index)}&wait=60s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const startedMs = performance.now();
    await registerService(consul, { name: 'brpc-echo', id: 'echo-2', address: '127.0.0.1', port: 8002, tags: ['idc-b'], check: { ttl: '30s', status: 'passing' } });
    const woke = await blocked;
    expect(performance.now() - startedMs).toBeLessThan(5_000); // woken by the change, not by the 60 s wait
    expect(woke.headers['x-consul-index']).not.toBe(index);
    expect(((await woke.body.json()) as unknown[]).length).toBe(2);
    // An unchanged service answers the same index when the wait ends: brpc then keeps its list.
    const idle = await request(`${base}&index=${String(woke.headers['x-consul-index'])}&wait=1s`);
    expect(idle.headers['x-consul-index']).toBe(woke.headers['x-consul-index']);
    await idle.body.dump();
    consul.destroy();
  });

  it("sees a service's first instance: a query blocked on the empty service's index wakes with a new index (issue 35.1)", async () => {
    const consul = new Consul({ host: '127.0.0.1', port: consulPort });
    const base = `http://127.0.0.1:${consulPort}/v1/health/service/brpc-first?stale&passing`;
    const empty = await request(base);
    expect(await empty.body.json()).toEqual([]);
    const index = String(empty.headers['x-consul-index']);
    expect(Number(index)).toBeGreaterThan(0);
    const blocked = request(`${base}&index=${index}&wait=60s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const startedMs = performance.now();
    await registerService(consul, { name: 'brpc-first', id: 'first-1', address: '127.0.0.1', port: 8011, check: { ttl: '30s', status: 'passing' } });
    const woke = await blocked;
    expect(performance.now() - startedMs).toBeLessThan(5_000);
    // brpc drops an answer whose index equals the one it holds: this one must differ.
    expect(woke.headers['x-consul-index']).not.toBe(index);
    expect(((await woke.body.json()) as { Service: { ID: string } }[]).map((entry) => entry.Service.ID)).toEqual(['first-1']);
    consul.destroy();
  });
});

describe('TLS', () => {
  it("serves the Consul API with the peer's certificate when tls is given", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'consul-tls-'));
    let tlsPeer: PeerProcess | undefined;
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
      let tlsConsulPort = 0;
      tlsPeer = await onFreshPorts(1, async ([port]) => {
        tlsConsulPort = port!;
        return startPeerProcess(['--port', '0', '--consul-port', String(tlsConsulPort), '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')]);
      });
      const dispatcher = new Agent({ connect: { ca: readFileSync(join(dir, 'cert.pem')) } });
      const response = await request(`https://127.0.0.1:${tlsConsulPort}/v1/catalog/services`, { dispatcher });
      expect(response.statusCode).toBe(200);
      expect(response.headers['x-consul-knownleader']).toBe('true');
      await response.body.dump();
      await dispatcher.close();
    } finally {
      tlsPeer?.kill();
      await tlsPeer?.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
