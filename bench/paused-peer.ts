/**
 * What a paused peer finds when it goes on (issue 36's heal), outside CI:
 * `npx tsx bench/paused-peer.ts [--peers=5] [--pause-s=20] [--rounds=3]` after `npm run build`.
 * Starts `--peers` empty peers (profile lan, one cluster on 127.0.0.1), stops the last one with
 * SIGSTOP for `--pause-s` while the others go on probing it, and reads how many connections wait
 * in its listening socket's accept queue meanwhile (/proc/net/tcp: the others' pings, each
 * abandoned at its timeout and replaced by a new connection). Then SIGCONT, and the time until
 * it answers a `GET /healthz` sent at once (behind every connection queued before it) and until
 * each other peer logs it back ("peer back"). With no registry at all, what the figures show is
 * the queue alone: the paused peer answers every abandoned call in order before the ones still
 * waited for. Each round waits for every peer to see it back (at most 10 s) before the next.
 * The queue can hold at most the listening socket's backlog (511, Node's default).
 * `--profile=DIR`: a CPU profile of the paused peer's first round, from just before its pause
 * to 1 s after it went on (bench/cpu-prof-preload.cjs; summarise with bench/cpu-profile-top.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort } from '../test/support/fault-proxy.js';
import { metricFigure, positiveArgument, profileWritten, progress, round, seenBackBy, sleep, timeToAnswer } from './lib.js';
import { startServer, type ServerProcess } from './processes.js';

/**
 * Connections waiting to be accepted on the listening socket of `port` (127.0.0.1): the
 * rx_queue of its LISTEN line (state 0A) in /proc/net/tcp; null when not found (not Linux).
 */
export function acceptQueueOf(procNetTcp: string, port: number): number | null {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of procNetTcp.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === local && fields[3] === '0A') return parseInt(fields[4]!.split(':')[1]!, 16);
  }
  return null;
}

function acceptQueue(port: number): number | null {
  try {
    return acceptQueueOf(readFileSync('/proc/net/tcp', 'utf8'), port);
  } catch {
    return null;
  }
}

interface Round {
  queuedBeforeContinue: number | null;
  answeredMs: number;
  seenBackMs: (number | null)[];
  /** Peer calls the paused peer skipped as abandoned (`registry_peer_calls_abandoned_total`, its increase in the round). */
  skipped: number | null;
}

async function pauseOnce(peers: ServerProcess[], pauseMs: number, profileDir: string | undefined): Promise<Round> {
  const paused = peers.at(-1)!;
  const skippedBefore = await metricFigure(paused.url, 'registry_peer_calls_abandoned_total');
  if (profileDir !== undefined) {
    process.kill(paused.pid, 'SIGUSR2');
    await sleep(300);
  }
  process.kill(paused.pid, 'SIGSTOP');
  let queued: number | null = null;
  try {
    await sleep(pauseMs);
    queued = acceptQueue(Number(new URL(paused.url).port));
  } finally {
    process.kill(paused.pid, 'SIGCONT');
  }
  const continuedAtEpochMs = Date.now();
  const answeredMs = await timeToAnswer(paused.url).catch(() => Number.NaN);
  const others = peers.slice(0, -1).map((peer) => peer.logFile);
  const seenBackMs = await seenBackBy(others, paused.name.replace(/^paused-/, ''), continuedAtEpochMs, 10_000);
  if (profileDir !== undefined) {
    await sleep(Math.max(0, 1_000 - (Date.now() - continuedAtEpochMs)));
    process.kill(paused.pid, 'SIGUSR2');
    await profileWritten(join(profileDir, `${paused.pid}-1.cpuprofile`), 30_000);
    progress(`profile: ${join(profileDir, `${paused.pid}-1.cpuprofile`)}`);
  }
  const skippedAfter = await metricFigure(paused.url, 'registry_peer_calls_abandoned_total');
  const skipped = skippedBefore === null || skippedAfter === null ? null : skippedAfter - skippedBefore;
  return { queuedBeforeContinue: queued, answeredMs: round(answeredMs), seenBackMs, skipped };
}

async function main(): Promise<void> {
  const count = Math.max(2, positiveArgument('peers', 5));
  const pauseMs = positiveArgument('pause-s', 20) * 1_000;
  const rounds = positiveArgument('rounds', 3);
  const profileDir = process.argv.find((arg) => arg.startsWith('--profile='))?.slice('--profile='.length);
  const ports: number[] = [];
  for (let k = 0; k < count; k++) ports.push(await freePort());
  const members = ports.map((port, k) => ({ id: `p${k + 1}`, url: `http://127.0.0.1:${port}`, region: 'local', zone: 'a' }));
  const config = join(tmpdir(), `registry-paused-peer-${process.pid}.json`);
  writeFileSync(config, JSON.stringify({ cluster: { name: 'paused-peer', profile: 'lan' }, peers: members }));
  const peers: ServerProcess[] = [];
  try {
    // Every start settled before going on, so that one failing leaves none of the others running.
    const starts = await Promise.allSettled(
      members.map((member, k) => {
        const profiled = profileDir !== undefined && k === count - 1;
        return startServer({
          name: `paused-${member.id}`,
          command: process.execPath,
          args: [...(profiled ? [`--require=${resolve('bench/cpu-prof-preload.cjs')}`] : []), 'dist/main.js', '--config', config, '--id', member.id, '--log-level', 'info'],
          pinned: false,
          healthPath: '/readyz',
          port: ports[k]!,
          ...(profiled ? { env: { CPU_PROF_DIR: resolve(profileDir) } } : {}),
        });
      }),
    );
    for (const start of starts) if (start.status === 'fulfilled') peers.push(start.value);
    const failed = starts.find((start) => start.status === 'rejected');
    if (failed) throw failed.reason;
    // Every peer probes every other one before the first pause.
    await sleep(3_000);
    for (let k = 1; k <= rounds; k++) {
      const result = await pauseOnce(peers, pauseMs, k === 1 ? profileDir : undefined);
      progress(
        `round ${k}: paused ${pauseMs / 1_000} s, ${result.queuedBeforeContinue ?? '?'} connections queued; it answered after ${result.answeredMs} ms; ` +
          `the others logged it back after ${result.seenBackMs.map((ms) => ms ?? '-').join(' / ')} ms; ${result.skipped ?? '?'} abandoned calls skipped`,
      );
    }
  } finally {
    for (const peer of peers) await peer.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
