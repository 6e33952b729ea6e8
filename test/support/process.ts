import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

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

/**
 * Starts `node dist/main.js` with the given flags (the same command the Docker image runs)
 * and waits until it logs that it listens. Only 127.0.0.1 is ever used.
 */
export async function startPeerProcess(
  args: string[],
  env: Record<string, string> = {},
  /** The peer's URL when the caller chose its port: then /healthz tells when it is up (any log level). */
  knownUrl?: string,
  /** Working directory (relative paths in the flags and the config resolve from it). */
  cwd: string = projectRoot,
): Promise<PeerProcess> {
  const child = spawn(process.execPath, [mainScript, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => {
    exitCode = code === null ? -1 : code;
  });
  const url = await waitFor<string>(
    async () => {
      if (exitCode !== undefined) throw new Error(`peer exited with ${exitCode}: ${stderr}`);
      if (knownUrl) return (await isHealthy(knownUrl)) && knownUrl;
      const started = logs.find((line) => line.msg === 'registry peer started');
      return started && `http://${String(started.address)}`;
    },
    20_000,
    'the peer to start',
  ).catch((error: unknown) => {
    // Never leave a half-started peer behind.
    if (child.exitCode === null) child.kill('SIGKILL');
    throw error;
  });
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
    const response = await request(`${url}/healthz`);
    await response.body.dump();
    return response.statusCode === 200;
  } catch {
    return false;
  }
}

/** Runs the peer to completion (for commands that should fail fast) and returns its exit code, stderr and stdout. */
export async function runPeerToExit(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawn(process.execPath, [mainScript, ...args], { cwd: projectRoot, env: { ...process.env, ...env } });
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
