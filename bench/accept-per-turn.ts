/**
 * How fast a Node server that was stopped gets through the connections queued meanwhile, with
 * its event loop idle, busy in slices (the reaper's scan, an anti-entropy store pass: work that
 * yields with a timer between slices), and busy but with its slices held until a turn accepts
 * no connection (what `gatedClock` does after a stall, src/clock/stall-watch.ts). Node accepts
 * one connection per turn of the loop (libuv since 1.45, libuv/libuv#3696), so the slices set
 * the pace. Outside CI: `npx tsx bench/accept-per-turn.ts [--connections=300] [--slice-ms=10]`.
 * Each case starts a child server on 127.0.0.1, stops it (SIGSTOP), opens `--connections`
 * connections that each send a GET and close (abandoned calls), waits 2 s, continues it
 * (SIGCONT) and reads from the child when it accepted them and answered their requests.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { pathToFileURL } from 'node:url';
import { freePort } from '../test/support/fault-proxy.js';
import { positiveArgument, progress, sleep } from './lib.js';

/**
 * The child server (plain JavaScript, run with `node -e`): `MODE` idle, busy or gated; prints
 * one JSON line on SIGUSR2 with how many connections it accepted since it went on, and when
 * (ms after the first) the median and the last were accepted.
 */
const CHILD = String.raw`
const { createServer } = require('node:http');
const mode = process.env.MODE, sliceMs = Number(process.env.SLICE_MS);
const accepted = [];
let connections = 0, lastLook = performance.now(), draining = false, held = [];
const server = createServer((req, res) => res.end('ok'));
server.on('connection', () => { connections++; accepted.push(performance.now()); });
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('listening\n'));
const watchDrain = (seen) => setImmediate(() => {
  if (connections !== seen) return watchDrain(connections);
  draining = false;
  for (const fn of held.splice(0)) fn();
});
const gate = (fn) => {
  const now = performance.now();
  if (mode === 'gated' && !draining && now - lastLook > 1000) { draining = true; watchDrain(connections); }
  lastLook = now;
  if (draining) held.push(fn); else fn();
};
const slice = () => { const until = performance.now() + sliceMs; while (performance.now() < until); setTimeout(() => gate(slice), 0); };
if (mode !== 'idle') slice();
process.on('SIGUSR2', () => {
  const first = accepted[0] ?? 0;
  const after = accepted.map((t) => t - first);
  process.stdout.write(JSON.stringify({ accepted: after.length, medianMs: Math.round(after[after.length >> 1] ?? -1), lastMs: Math.round(after.at(-1) ?? -1) }) + '\n');
});
`;

interface Case {
  accepted: number;
  medianMs: number;
  lastMs: number;
}

async function runCase(mode: 'idle' | 'busy' | 'gated', connections: number, sliceMs: number): Promise<Case> {
  const port = await freePort();
  const child = spawn(process.execPath, ['-e', CHILD], { env: { ...process.env, MODE: mode, SLICE_MS: String(sliceMs), PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  try {
    const untilMs = performance.now() + 10_000;
    while (!out.includes('listening') && performance.now() < untilMs) await sleep(20);
    child.kill('SIGSTOP');
    const sockets = Array.from({ length: connections }, () => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.on('connect', () => socket.end('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
      return socket;
    });
    await sleep(2_000);
    child.kill('SIGCONT');
    // Bounded: whatever was not accepted within 2 s shows in the count.
    await sleep(2_000);
    child.kill('SIGUSR2');
    const line = () => out.split('\n').find((row) => row.startsWith('{'));
    while (line() === undefined && performance.now() < untilMs + 10_000) await sleep(20);
    for (const socket of sockets) socket.destroy();
    return JSON.parse(line() ?? '{"accepted":0,"medianMs":-1,"lastMs":-1}') as Case;
  } finally {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  const connections = positiveArgument('connections', 300);
  const sliceMs = positiveArgument('slice-ms', 10);
  for (const mode of ['idle', 'busy', 'gated'] as const) {
    const result = await runCase(mode, connections, sliceMs);
    progress(
      `${mode}${mode === 'idle' ? '' : ` (slices of ${sliceMs} ms)`}: ${result.accepted} of ${connections} connections accepted within 2 s of SIGCONT; ` +
        `the median ${result.medianMs} ms and the last ${result.lastMs} ms after the first`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
