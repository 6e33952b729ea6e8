import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import dnsPacket from 'dns-packet';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_TCP_CONNECTIONS } from '../../src/dns/limits.js';
import { DNS_TCP_LIMITS } from '../../src/dns/tcp.js';
import { callJson } from '../support/http.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/**
 * What one source can make a peer's DNS listener do (docs/dns.md, "Limits"), with real sockets
 * on 127.0.0.1 and 127.0.0.2 (two sources on loopback): TCP backpressure against a client
 * that never reads, the whole-query deadline, the peer's cap of TCP connections, and
 * the per-source query rate (on a second peer whose loopback sources are limited by the
 * peer-wide limit; the UDP amplification limit leaves loopback out and is tested in
 * test/unit/dns/limits.test.ts).
 */

let dir: string;
let peer: PeerProcess;
let limited: PeerProcess;
let dnsPort: number;
let limitedDnsPort: number;
const SERVICE = 'big';

async function startDnsPeer(config: unknown): Promise<{ peer: PeerProcess; port: number }> {
  const file = join(dir, `config-${Math.random().toString(16).slice(2)}.json`);
  await writeFile(file, JSON.stringify(config));
  const started = await startPeerProcess(['--config', file, '--host', '127.0.0.1', '--port', '0', '--profile', 'local', '--dns-port', '0', '--log-level', 'info']);
  const listening = await waitFor(() => started.logs.find((line) => line.msg === 'dns listening'), 10_000, 'the dns listener');
  return { peer: started, port: Number(listening.port) };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registry-dns-limits-'));
  ({ peer, port: dnsPort } = await startDnsPeer({ limits: { rateLimitPerSecond: 0 } }));
  // Loopback sources are limited only when configured (limits.rateLimitLoopbackPerSecond): the peer-wide limit every protocol counts in.
  ({ peer: limited, port: limitedDnsPort } = await startDnsPeer({ limits: { rateLimitLoopbackPerSecond: 100, rateLimitBurst: 100 } }));
  // 100 instances whose TXT records (three 200-byte metadata values each) make a ~64 KB answer.
  const value = 'v'.repeat(200);
  for (let i = 0; i < 100; i++) {
    const result = await callJson('POST', `${peer.url}/v1/instances`, { service: SERVICE, host: `10.7.0.${i + 1}`, port: 80, leaseDurationMs: 600_000, metadata: { a: value, b: value, c: value } });
    expect(result.status).toBe(201);
  }
  await callJson('POST', `${limited.url}/v1/instances`, { service: 'web', host: '10.8.0.1', port: 80, leaseDurationMs: 600_000 });
}, 60_000);

afterAll(async () => {
  peer?.kill('SIGKILL');
  limited?.kill('SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
});

function query(id: number, name: string, type: 'A' | 'TXT'): Buffer {
  return dnsPacket.encode({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type }] });
}

function framed(message: Buffer): Buffer {
  const out = Buffer.alloc(2 + message.length);
  out.writeUInt16BE(message.length, 0);
  message.copy(out, 2);
  return out;
}

/** A TCP connection to the DNS port from `localAddress`, once connected. */
function open(port: number, localAddress = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves with 'answer' on the first bytes back, or 'closed' when the peer closes first. */
function outcome(socket: Socket): Promise<'answer' | 'closed'> {
  return new Promise((resolve) => {
    socket.once('data', () => resolve('answer'));
    socket.once('close', () => resolve('closed'));
  });
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

describe('DNS over TCP limits', () => {
  it('a client that pipelines 1,600 queries of a 64 KB answer and never reads costs the peer little memory, and the peer still answers', async () => {
    const before = rssMb(peer.child.pid!);
    const sockets = await Promise.all(Array.from({ length: 4 }, () => open(dnsPort, '127.0.0.2')));
    const queries = Buffer.concat(Array.from({ length: 1_600 }, (_, i) => framed(query(i, `${SERVICE}.service.registry`, 'TXT'))));
    for (const socket of sockets) {
      socket.pause(); // never read
      socket.on('error', () => {});
      socket.write(queries);
    }
    let peak = before;
    const untilMs = Date.now() + 3_000;
    while (Date.now() < untilMs) {
      peak = Math.max(peak, rssMb(peer.child.pid!));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const health = await request(`${peer.url}/healthz`, { headersTimeout: 5_000 });
    await health.body.dump();
    expect(health.statusCode).toBe(200);
    for (const socket of sockets) socket.destroy();
    // Before backpressure: every query answered into the socket's queue, 4 x 1,600 x 64 KB (400 MB).
    expect(peak - before).toBeLessThan(100);
    expect(peer.stderr()).not.toContain('MaxListenersExceededWarning');
  }, 30_000);

  it('cuts a query sent one byte every 4 s at the query deadline (the bytes do not reset it)', async () => {
    const socket = await open(dnsPort);
    const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    const bytes = framed(query(1, `${SERVICE}.service.registry`, 'A'));
    const startedMs = Date.now();
    let sent = 0;
    const dribble = setInterval(() => {
      if (!socket.destroyed) socket.write(bytes.subarray(sent, ++sent));
    }, 4_000);
    socket.write(bytes.subarray(0, ++sent));
    try {
      const closedAtMs = await Promise.race([closed, new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), 20_000))]);
      // The deadline is 5 s; before it, each byte reset a 10 s idle timer and the connection lived on.
      expect(closedAtMs - startedMs).toBeGreaterThanOrEqual(DNS_TCP_LIMITS.queryDeadlineMs - 500);
      expect(closedAtMs - startedMs).toBeLessThan(DNS_TCP_LIMITS.queryDeadlineMs + 4_000);
    } finally {
      clearInterval(dribble);
      socket.destroy();
    }
  }, 30_000);

  it('holds the peer to 1,000 TCP connections from the contract pool (a loopback source has no share of its own): the next is closed and logged', async () => {
    // The share per source is the contract's (limits.heldSharePerPrincipalRatio), which exempts
    // loopback sources; test/unit/dns/limits.test.ts checks it for other addresses.
    const held: Socket[] = [];
    try {
      for (let i = 0; i < MAX_TCP_CONNECTIONS; i++) {
        const socket = await open(dnsPort, '127.0.0.3');
        socket.on('error', () => {});
        held.push(socket);
      }
      // The last one is answered: the peer has taken every one of them by now.
      const last = held.at(-1)!;
      const answered = outcome(last);
      last.write(framed(query(2, `${SERVICE}.service.registry`, 'A')));
      expect(await answered).toBe('answer');
      const extra = await open(dnsPort, '127.0.0.4');
      held.push(extra);
      const refused = outcome(extra);
      extra.write(framed(query(3, `${SERVICE}.service.registry`, 'A')));
      expect(await refused).toBe('closed');
      const logged = await waitFor(() => peer.logs.find((line) => String(line.msg).startsWith('dns tcp connection refused')), 5_000, 'the refusal in the log');
      expect(logged).toMatchObject({ level: 40, from: '127.0.0.4', cap: 'peer' });
      // One freed slot is free again.
      const closed = new Promise((resolve) => held[0]!.once('close', resolve));
      held[0]!.destroy();
      await closed;
      const again = await waitFor(async () => {
        const socket = await open(dnsPort, '127.0.0.4');
        held.push(socket);
        const result = outcome(socket);
        socket.write(framed(query(4, `${SERVICE}.service.registry`, 'A')));
        return (await result) === 'answer';
      }, 10_000, 'a connection once a slot is free');
      expect(again).toBe(true);
    } finally {
      for (const socket of held) socket.destroy();
    }
  }, 60_000);
});

describe('DNS per-source query rate', () => {
  it('a UDP flood from one source is held to its rate (the rest dropped or truncated); another source is answered', async () => {
    const socket = createSocket('udp4');
    const replies: dnsPacket.DecodedPacket[] = [];
    socket.on('message', (message) => replies.push(dnsPacket.decode(message)));
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.5', resolve));
    try {
      const startedMs = Date.now();
      for (let i = 0; i < 1_000; i++) socket.send(query(i, 'web.service.registry', 'A'), limitedDnsPort, '127.0.0.1');
      await waitFor(() => replies.length >= 100, 10_000, 'the first answers');
      await new Promise((resolve) => setTimeout(resolve, 500));
      const seconds = (Date.now() - startedMs) / 1_000;
      const full = replies.filter((reply) => !reply.flag_tc).length;
      const truncated = replies.filter((reply) => reply.flag_tc).length;
      expect(full).toBeGreaterThanOrEqual(100);
      expect(full).toBeLessThanOrEqual(100 + Math.ceil(100 * seconds));
      expect(truncated).toBeGreaterThan(0);
      // Half of what is past the rate gets a truncated answer (the slip), the rest nothing.
      expect(truncated).toBeLessThanOrEqual(Math.ceil((1_000 - full) / 2) + 1);
      expect(truncated + full).toBeLessThan(1_000);
    } finally {
      socket.close();
    }
    const other = createSocket('udp4');
    try {
      await new Promise<void>((resolve) => other.bind(0, '127.0.0.6', resolve));
      const answer = new Promise<dnsPacket.DecodedPacket>((resolve) => other.once('message', (message) => resolve(dnsPacket.decode(message))));
      other.send(query(1, 'web.service.registry', 'A'), limitedDnsPort, '127.0.0.1');
      expect(await answer).toMatchObject({ rcode: 'NOERROR', flag_tc: false, answers: [{ type: 'A', data: '10.8.0.1' }] });
    } finally {
      other.close();
    }
  }, 30_000);

  it('a TCP source past its rate is answered REFUSED', async () => {
    const socket = await open(limitedDnsPort, '127.0.0.7');
    const rcodes: string[] = [];
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        rcodes.push(String((dnsPacket.decode(pending.subarray(2, 2 + pending.readUInt16BE(0))) as { rcode?: string }).rcode));
        pending = pending.subarray(2 + pending.readUInt16BE(0));
      }
    });
    try {
      socket.write(Buffer.concat(Array.from({ length: 300 }, (_, i) => framed(query(i, 'web.service.registry', 'A')))));
      await waitFor(() => rcodes.length === 300, 10_000, '300 answers');
      expect(rcodes.filter((rcode) => rcode === 'NOERROR').length).toBeGreaterThanOrEqual(100);
      expect(rcodes.filter((rcode) => rcode === 'REFUSED').length).toBeGreaterThan(0);
    } finally {
      socket.destroy();
    }
  }, 30_000);
});
