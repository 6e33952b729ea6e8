import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callJson } from '../support/http.js';
import { onFreshPorts, PortTakenError } from '../support/ports.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/**
 * The DNS listener against real programs from Debian, on 127.0.0.1 only: `dig`
 * (bind9-dnsutils) and HAProxy 2.6 resolving a service's SRV records. In CI the programs must
 * be there (.ci/run installs them); elsewhere a missing one skips its part.
 */
const DIG = '/usr/bin/dig';
const HAPROXY = '/usr/sbin/haproxy';
const inCi = process.env.CI === 'true';
const run = promisify(execFile);

let peer: PeerProcess;
let dnsPort: number;

beforeAll(async () => {
  peer = await startPeerProcess(['--host', '127.0.0.1', '--port', '0', '--profile', 'local', '--dns-port', '0', '--log-level', 'info']);
  const listening = await waitFor(() => peer.logs.find((line) => line.msg === 'dns listening'), 10_000, 'the dns listener');
  dnsPort = Number(listening.port);
}, 60_000);

afterAll(() => {
  peer?.kill('SIGKILL');
});

const register = (service: string, host: string, port: number, extra: Record<string, unknown> = {}) =>
  callJson('POST', `${peer.url}/v1/instances`, { service, host, port, leaseDurationMs: 600_000, ...extra });

async function dig(...args: string[]): Promise<string> {
  const { stdout } = await run(DIG, ['@127.0.0.1', '-p', String(dnsPort), '+time=2', '+tries=2', ...args], { timeout: 20_000 });
  return stdout;
}

const lines = (text: string) => text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith(';'));

describe.skipIf(!existsSync(DIG) && !inCi)('DNS with dig', () => {
  it('answers A with the UP instances, whatever the case of the name', async () => {
    for (const [i, status] of [[1, 'UP'], [2, 'UP'], [3, 'UP'], [4, 'DOWN']] as const) expect((await register('Web', `10.0.0.${i}`, 8000 + i, { status })).status).toBe(201);
    expect(lines(await dig('web.service.registry', 'A', '+short')).sort()).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    const mixed = await dig('wEB.SerVice.REGISTRY', 'A', '+noall', '+question', '+answer', '+comments');
    expect(mixed).toContain('status: NOERROR');
    expect(mixed).toContain(';wEB.SerVice.REGISTRY.');
    expect(lines(mixed).map((line) => line.split(/\s+/).at(-1)).sort()).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
  });

  it('answers SRV with ports, weights and targets resolved in the additional section', async () => {
    await register('api', '10.0.1.1', 9001, { weight: 5, zone: 'z1' });
    await register('api', '10.0.1.2', 9002, { zone: 'z2' });
    const srv = lines(await dig('_api._tcp.service.registry', 'SRV', '+noall', '+answer', '+additional'));
    const records = srv.map((line) => line.split(/\s+/));
    expect(records.filter((record) => record[3] === 'SRV').map((record) => record.slice(4).join(' ')).sort()).toEqual([
      '0 1 9002 0a000102-9002.addr.registry.',
      '0 5 9001 0a000101-9001.addr.registry.',
    ]);
    expect(records.filter((record) => record[3] === 'A').map((record) => `${record[0]} ${record[4]}`).sort()).toEqual([
      '0a000101-9001.addr.registry. 10.0.1.1',
      '0a000102-9002.addr.registry. 10.0.1.2',
    ]);
    // Near zone z2: its instance first (priority 0), the other after.
    expect(lines(await dig('z2.api.service.registry', 'SRV', '+short')).sort()).toEqual(['0 1 9002 0a000102-9002.addr.registry.', '2 5 9001 0a000101-9001.addr.registry.']);
  });

  it('answers NXDOMAIN with the SOA for an unknown name, and REFUSED outside its domain', async () => {
    const unknown = await dig('nope.service.registry', 'A');
    expect(unknown).toContain('status: NXDOMAIN');
    expect(unknown).toMatch(/AUTHORITY SECTION:\nregistry\.\s+5\s+IN\s+SOA\s+ns\.registry\. hostmaster\.registry\./);
    expect(await dig('example.com', 'A')).toContain('status: REFUSED');
  });

  it('truncates a 500-instance answer over UDP and dig gets it whole over TCP', async () => {
    const batch = Array.from({ length: 500 }, (_, i) => i);
    for (let at = 0; at < batch.length; at += 50) {
      const results = await Promise.all(batch.slice(at, at + 50).map((i) => register('big', `10.1.${Math.floor(i / 200)}.${(i % 200) + 1}`, 7000 + i)));
      expect(results.every((result) => result.status === 201)).toBe(true);
    }
    const udpOnly = await dig('big.service.registry', 'SRV', '+ignore', '+notcp');
    expect(udpOnly).toMatch(/flags: qr aa tc/);
    const fallback = await dig('big.service.registry', 'SRV');
    expect(fallback).toContain('Truncated, retrying in TCP mode');
    expect(fallback).toContain('ANSWER: 500, AUTHORITY: 0, ADDITIONAL: 501');
    expect(fallback).toContain('(TCP)');
    expect(lines(await dig('big.service.registry', 'A', '+tcp', '+short'))).toHaveLength(500);
  });
});

describe.skipIf(!existsSync(DIG) && !inCi)('DNS from a source outside dns.allowFrom', () => {
  it('answers REFUSED over UDP and closes TCP connections', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'registry-dns-'));
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ dns: { allowFrom: ['10.0.0.0/8'] } }));
    const fenced = await startPeerProcess(['--config', file, '--host', '127.0.0.1', '--port', '0', '--profile', 'local', '--dns-port', '0']);
    try {
      const port = Number((await waitFor(() => fenced.logs.find((line) => line.msg === 'dns listening'), 10_000, 'the dns listener')).port);
      await callJson('POST', `${fenced.url}/v1/instances`, { service: 'web', host: '10.0.0.1', port: 80 });
      const ask = (...args: string[]) =>
        run(DIG, ['@127.0.0.1', '-p', String(port), '+time=1', '+tries=1', 'web.service.registry', 'A', ...args], { timeout: 10_000 }).then(
          ({ stdout }) => stdout,
          (error: { stdout?: string }) => error.stdout ?? '',
        );
      const udp = await ask();
      expect(udp).toContain('status: REFUSED');
      expect(udp).toContain('ANSWER: 0');
      const tcp = await ask('+tcp');
      expect(tcp).not.toContain('status:');
    } finally {
      fenced.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** A small HTTP backend that answers its own name. */
async function backend(name: string): Promise<{ name: string; port: number; server: Server }> {
  const server = createServer((_request, response) => response.end(name));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { name, port: (server.address() as AddressInfo).port, server };
}

async function fetchName(url: string): Promise<string | null> {
  try {
    const response = await request(url, { signal: AbortSignal.timeout(2_000) });
    const text = await response.body.text();
    return response.statusCode === 200 ? text : null;
  } catch {
    return null;
  }
}

describe.skipIf(!existsSync(HAPROXY) && !inCi)('DNS with HAProxy 2.6 (server-template, SRV)', () => {
  let haproxy: ChildProcess | undefined;
  let dir: string;
  const backends: { name: string; port: number; server: Server }[] = [];

  afterAll(async () => {
    if (haproxy && haproxy.exitCode === null && haproxy.signalCode === null) haproxy.kill('SIGKILL');
    for (const { server } of backends) server.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('balances requests over the registered backends and drops a cancelled one within seconds', async () => {
    for (const name of ['b1', 'b2', 'b3']) backends.push(await backend(name));
    for (const { name, port } of backends) expect((await register('shop', '127.0.0.1', port, { instanceId: name })).status).toBe(201);
    dir = await mkdtemp(join(tmpdir(), 'registry-haproxy-'));
    // HAProxy binds the front port it is given: when that port was taken before it listened,
    // it exits at start, and starts again on a fresh one.
    let output = '';
    let url = '';
    const seen = async (count: number) => {
      const names = new Map<string, number>();
      for (let i = 0; i < count; i++) {
        const name = (await fetchName(url)) ?? 'error';
        names.set(name, (names.get(name) ?? 0) + 1);
      }
      return names;
    };
    await onFreshPorts(1, async ([frontPort]) => {
      const config = [
        'global',
        '  maxconn 100',
        'defaults',
        '  mode http',
        '  timeout connect 1s',
        '  timeout client 5s',
        '  timeout server 5s',
        'resolvers registry',
        `  nameserver peer 127.0.0.1:${dnsPort}`,
        '  accepted_payload_size 1232',
        '  resolve_retries 3',
        '  timeout resolve 250ms',
        '  timeout retry 250ms',
        '  hold valid 1s',
        '  hold obsolete 1s',
        '  hold nx 1s',
        '  hold other 1s',
        'frontend shop',
        `  bind 127.0.0.1:${frontPort}`,
        '  default_backend shop',
        'backend shop',
        '  balance roundrobin',
        '  server-template shop 5 _shop._tcp.service.registry resolvers registry init-addr none',
        '',
      ].join('\n');
      await writeFile(join(dir, 'haproxy.cfg'), config);
      output = '';
      const child = spawn(HAPROXY, ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] });
      haproxy = child;
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      // 'close', not 'exit': only then has all of its output arrived.
      const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
      url = `http://127.0.0.1:${frontPort}/`;
      const exited = async () => {
        await closed;
        // [ALERT] ... cannot bind socket (Address already in use) for [127.0.0.1:PORT]
        const taken = output.includes(`cannot bind socket (Address already in use) for [127.0.0.1:${frontPort}]`);
        return taken ? new PortTakenError(`haproxy exited: ${output}`) : new Error(`haproxy exited: ${output}`);
      };
      await waitFor(async () => (await seen(9)).size === 3 || (child.exitCode !== null && Promise.reject(await exited())), 20_000, `haproxy to reach the three backends (${output})`, 200);
    });
    const spread = await seen(30);
    expect([...spread.keys()].sort()).toEqual(['b1', 'b2', 'b3']);
    expect(Math.min(...spread.values())).toBeGreaterThanOrEqual(5);

    // Cancel b2 (its server keeps running: only DNS can take it out of the pool).
    const cancelledAtMs = Date.now();
    expect((await callJson('DELETE', `${peer.url}/v1/services/shop/instances/b2`)).status).toBe(200);
    await waitFor(async () => !(await seen(12)).has('b2'), 15_000, `haproxy to drop b2 (${output})`, 100);
    const droppedAfterMs = Date.now() - cancelledAtMs;
    const after = await seen(30);
    expect([...after.keys()].sort()).toEqual(['b1', 'b3']);
    // "Within a few seconds": the resolver's hold times above add up to about two.
    expect(droppedAfterMs).toBeLessThan(10_000);
  }, 60_000);
});
