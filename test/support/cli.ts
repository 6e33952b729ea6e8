import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { projectRoot, waitFor } from './process.js';

export const cliScript = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment for the command line in tests: none of the caller's REGISTRY_* settings leak in. */
function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('REGISTRY_')));
  return { ...base, ...env };
}

/** Runs `registry ARGS` (the built bin) to completion; killed after `timeoutMs`. */
export async function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000): Promise<CliRun> {
  const child = spawn(process.execPath, [cliScript, ...args], { cwd: projectRoot, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** A long-running `registry ARGS` (watch, start, cluster) whose output the test reads as it comes. */
export interface CliProcess {
  child: ChildProcess;
  output: () => string;
  errors: () => string;
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Sends a signal and resolves with the exit code (only ever the pid this test started). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function spawnCli(args: string[], env: Record<string, string> = {}): CliProcess {
  const child = spawn(process.execPath, [cliScript, ...args], { cwd: projectRoot, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    child,
    output: () => stdout,
    errors: () => stderr,
    waitForOutput: (text, timeoutMs = 15_000) =>
      waitFor(() => (typeof text === 'string' ? stdout.includes(text) : text.test(stdout)), timeoutMs, `output ${String(text)}; got:\n${stdout}\n${stderr}`).then(() => undefined),
    stop: async (signal = 'SIGINT') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await closed;
      clearTimeout(timer);
      return code;
    },
  };
}
