import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { STALL_MS } from '../../src/clock/stall-watch.js';
import { DEADLINE_SLACK_MS } from '../../src/http/abandoned-calls.js';
import { DEADLINE_HEADER } from '../../src/transport/http-transport.js';
import { parsePrometheusText, sampleValue } from '../support/prom-text.js';
import { startPeerProcess, waitFor, type PeerProcess } from '../support/process.js';

/**
 * A peer stopped with SIGSTOP (src/http/abandoned-calls.ts): the peer calls whose caller gave
 * up during the stop (sent, then the connection closed: what undici does at a call's timeout;
 * or past the deadline the caller sent with it) are skipped unanswered when it goes on, and the
 * call still waited for is answered.
 */

const started: PeerProcess[] = [];
const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const peer of started.splice(0)) {
    peer.kill('SIGCONT');
    peer.kill('SIGKILL');
  }
});

const PING = (body: string, extraHeaders = '') =>
  `POST /v1/peer/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extraHeaders}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** A raw connection to the peer: what it received, and whether it was closed. */
function open(url: string): Promise<{ socket: Socket; received: () => string; closed: () => boolean }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  let received = '';
  let closed = false;
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('close', () => (closed = true));
  socket.on('error', () => {});
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve({ socket, received: () => received, closed: () => closed }));
    socket.once('error', reject);
  });
}

async function figure(url: string, name: string): Promise<number | undefined> {
  const response = await fetch(`${url}/metrics`);
  return sampleValue(parsePrometheusText(await response.text()), name);
}

describe('a peer that stood still', () => {
  it('skips the peer calls abandoned meanwhile and answers the one still waited for', async () => {
    const peer = await startPeerProcess(['--port', '0', '--host', '127.0.0.1', '--profile', 'local']);
    started.push(peer);
    expect(await figure(peer.url, 'registry_peer_calls_abandoned_total')).toBe(0);

    peer.kill('SIGSTOP');
    const stoppedAtMs = Date.now();
    // Ten callers send a ping and give up on it; one sends its ping and waits.
    const gaveUp = await Promise.all(Array.from({ length: 10 }, () => open(peer.url)));
    for (const call of gaveUp) call.socket.end(PING('{}'));
    const waiting = await open(peer.url);
    waiting.socket.write(PING('{}', `${DEADLINE_HEADER}: ${Date.now() + 60_000}\r\n`));
    // A call whose caller's deadline passed, on a connection it keeps open (a batch on a pooled connection).
    const expired = await open(peer.url);
    expired.socket.write(PING('{}', `${DEADLINE_HEADER}: ${Date.now() - DEADLINE_SLACK_MS}\r\n`));
    // The kernel accepts the connections for the stopped peer: it must stay stopped for a stall.
    await waitFor(() => Date.now() - stoppedAtMs > STALL_MS + 500, 10_000, 'the stall');
    peer.kill('SIGCONT');

    // Answered (an empty ping is refused: what matters is that an answer came).
    await waitFor(() => waiting.received().startsWith('HTTP/1.1 '), 20_000, 'the answer to the call still waited for');
    expect(waiting.received()).toMatch(/^HTTP\/1\.1 400 /);
    await waitFor(() => [...gaveUp, expired].every((call) => call.closed()), 20_000, 'the abandoned calls closed');
    expect([...gaveUp, expired].map((call) => call.received())).toEqual([...gaveUp, expired].map(() => ''));
    expect(await figure(peer.url, 'registry_peer_calls_abandoned_total')).toBe(11);
    expect(await figure(peer.url, 'registry_event_loop_stalls_total')).toBeGreaterThanOrEqual(1);
    await waitFor(() => peer.logs.some((line) => line.msg === 'event loop stood still: peer calls whose caller gave up meanwhile are skipped'), 5_000, 'the stall log line');
  });
});
