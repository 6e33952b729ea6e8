import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { PEER_NODE_FLAGS } from '../../src/node-flags.js';

export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));
export const mainScript = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/** Resolves when `predicate` holds, polling every `intervalMs`; rejects after `timeoutMs` (real time). */
export async function waitFor<T>(
  predicate: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs: number,
  what: string,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export interface PeerProcess {
  child: ChildProcess;
  /** Base URL, once the peer said where it listens. */
  url: string;
  /** Every log line so far, parsed. */
  logs: Record<string, unknown>[];
  stderr: () => string;
  exited: Promise<number | null>;
  /** Sends a signal to this process (only ever the pid we started). */
  kill(signal?: NodeJS.Signals): void;
}

/** How long one /healthz probe of a starting peer may take: whatever holds the port may never answer. */
const HEALTH_PROBE_TIMEOUT_MS = 2_000;

/** pino's number for `fatal`. */
const FATAL_LEVEL = 60;

/**
 * A peer process that ended before it was up, with what it said last: its fatal log line
 * when it wrote one (`cannot listen`, `cannot use the data dir`), else the tail of its output.
 */
export class PeerStartError extends Error {
  constructor(
    /** The exit code, or null when a signal ended it. */
    readonly exitCode: number | null,
    readonly signal: NodeJS.Signals | null,
    /** The fatal log line, or the last lines of stdout and stderr. */
    readonly reason: string,
    /** The peer could not listen because its port was taken (the one failure a new port fixes). */
    readonly addressInUse: boolean,
  ) {
    super(`peer exited ${signal ? `on ${signal}` : `with code ${exitCode}`} before it was up: ${reason}`);
    this.name = 'PeerStartError';
  }
}

/** Why a peer ended at start, read from its output (a pure function of what it wrote). */
export function startFailure(
  end: { code: number | null; signal: NodeJS.Signals | null },
  logs: Record<string, unknown>[],
  stderr: string,
): PeerStartError {
  const fatal = logs.findLast((line) => line.level === FATAL_LEVEL);
  if (fatal) {
    const err = fatal.err as { code?: unknown; message?: unknown } | undefined;
    const addressInUse = err?.code === 'EADDRINUSE' || String(err?.message ?? '').includes('EADDRINUSE');
    const { stack: _stack, ...errWithoutStack } = (err ?? {}) as Record<string, unknown>;
    const line = JSON.stringify(err ? { ...fatal, err: errWithoutStack } : fatal);
    return new PeerStartError(end.code, end.signal, `${String(fatal.msg)}${err?.message ? `: ${String(err.message)}` : ''} (log line: ${line})`, addressInUse);
  }
  const tail = (lines: string[]) => lines.filter((line) => line.trim() !== '').slice(-5).join('\n');
  const stdoutTail = tail(logs.map((line) => JSON.stringify(line)));
  const stderrTail = tail(stderr.split('\n'));
  const reason = [stderrTail && `stderr: ${stderrTail}`, stdoutTail && `stdout: ${stdoutTail}`].filter(Boolean).join('; ');
  return new PeerStartError(end.code, end.signal, reason || 'no output', false);
}

/** What a peer logs once it listens, with its `address`. */
const START_LINE = 'registry peer started';
const urlOf = (started: Record<string, unknown>) => `http://${String(started.address)}`;

/**
 * The URL a peer's start line gives, read from its raw output (JSON lines, as into a pipe or a
 * file); undefined until that whole line is there.
 */
export function startedUrl(output: string): string | undefined {
  const line = output.split('\n').slice(0, -1).find((text) => text.includes(`"msg":"${START_LINE}"`));
  return line === undefined ? undefined : urlOf(JSON.parse(line) as Record<string, unknown>);
}

/**
 * Starts `node dist/main.js` with the given flags (the same command as the Docker image and
 * `npm start`, with their Node flags: src/node-flags.ts)
 * and waits until it logs that it listens. Only 127.0.0.1 is ever used. A peer that ends
 * before it is up rejects at once with a `PeerStartError` naming why (its fatal log line).
 */
export async function startPeerProcess(
  args: string[],
  env: Record<string, string> = {},
  /** The peer's URL when the caller chose its port: then /healthz tells when it is up (any log level). */
  knownUrl?: string,
  /** Working directory (relative paths in the flags and the config resolve from it). */
  cwd: string = projectRoot,
): Promise<PeerProcess> {
  const child = spawn(process.execPath, [...PEER_NODE_FLAGS, mainScript, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  let partial = '';
  const parse = (line: string) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
  };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) parse(line);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  // Listened for now, not when the exit is noticed: 'close' has often fired by then, and a
  // listener added after it waits forever. 'close' (not 'exit') because only then has all of
  // stdout arrived, the fatal line included.
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  let starting = true;
  // Rejects with why the peer ended, if it ended while starting.
  const endedEarly = closed.then((end) => {
    if (partial !== '') parse(partial);
    if (starting) throw startFailure(end, logs, stderr);
  });
  const exitSeen = Symbol('exit seen');
  const up = waitFor<string | typeof exitSeen>(
    async () => {
      // 'exit' can come before 'close': stop polling, and let `endedEarly` say why.
      if (child.exitCode !== null || child.signalCode !== null) return exitSeen;
      if (knownUrl) return (await isHealthy(knownUrl)) && knownUrl;
      const started = logs.find((line) => line.msg === START_LINE);
      return started && urlOf(started);
    },
    20_000,
    'the peer to start',
  );
  let url: string;
  try {
    // The end wins even while a health probe still waits on whatever holds the port.
    const first = await Promise.race([up, endedEarly]);
    if (typeof first !== 'string') {
      await endedEarly; // throws: the process ended while starting
      throw new Error('unreachable: the peer exited but its end was not reported');
    }
    url = first;
  } catch (error) {
    // Never leave a half-started peer behind.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    throw error;
  } finally {
    starting = false;
  }
  return {
    child,
    url,
    logs,
    stderr: () => stderr,
    exited,
    kill: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

async function isHealthy(url: string): Promise<boolean> {
  try {
    const response = await request(`${url}/healthz`, { signal: AbortSignal.timeout(HEALTH_PROBE_TIMEOUT_MS) });
    await response.body.dump();
    return response.statusCode === 200;
  } catch {
    return false;
  }
}

/** Runs the peer to completion (for commands that should fail fast) and returns its exit code, stderr and stdout. */
export async function runPeerToExit(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawn(process.execPath, [...PEER_NODE_FLAGS, mainScript, ...args], { cwd: projectRoot, env: { ...process.env, ...env } });
  let stderr = '';
  let stdout = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  return { code, stderr, stdout };
}
