/**
 * Server processes of the benchmarks: a registry peer (`node dist/main.js`), the bare fastify
 * reference (bench/reference-server.ts) and etcd, each in its own process with its output in a
 * log file under bench/out/ (never piped into the load generator, which would pay for parsing
 * it), optionally pinned to one CPU with taskset. Only 127.0.0.1; killed by pid.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { PEER_NODE_FLAGS } from '../src/node-flags.js';
import { freePort } from '../test/support/fault-proxy.js';
import { sleep } from './lib.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const outDir = fileURLToPath(new URL('./out/', import.meta.url));

/**
 * CPUs of the machine (not of this process's affinity, which pinning changes: restoring from
 * the affinity would pin for good).
 */
const CPU_COUNT = cpus().length;

/** Is taskset there, and are there at least two CPUs to split between server and load? */
export function pinningAvailable(): boolean {
  if (CPU_COUNT < 2) return false;
  return spawnSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' }).status === 0;
}

/** The CPU servers run on when pinned; the load generator (this process) takes the others. */
export const SERVER_CPU = 0;

/**
 * Pins every thread of this process (the load generator) to the CPUs other than the servers'
 * one, or back to all CPUs. No-op without taskset.
 */
export function pinLoadGenerator(pinned: boolean): void {
  const list = pinned ? `${SERVER_CPU + 1}-${CPU_COUNT - 1}` : `0-${CPU_COUNT - 1}`;
  spawnSync('taskset', ['-a', '-p', '-c', list, String(process.pid)], { stdio: 'ignore' });
}

export interface ServerProcess {
  name: string;
  url: string;
  pid: number;
  child: ChildProcess;
  logFile: string;
  /** Resident set size now, in MB (from /proc/<pid>/status). */
  rssMb(): number;
  /** SIGKILLs this process (only ever the pid we started) and waits for it. */
  stop(): Promise<void>;
}

export interface StartOptions {
  name: string;
  command: string;
  args: string[];
  /** Pin to SERVER_CPU with taskset. */
  pinned: boolean;
  /** How to tell it is up: an HTTP path answering 2xx. */
  healthPath: string;
  port: number;
  env?: Record<string, string>;
  startTimeoutMs?: number;
}

export async function startServer(options: StartOptions): Promise<ServerProcess> {
  mkdirSync(outDir, { recursive: true });
  const logFile = `${outDir}${options.name}.log`;
  const fd = openSync(logFile, 'w');
  const [command, args] = options.pinned
    ? ['taskset', ['-c', String(SERVER_CPU), options.command, ...options.args]]
    : [options.command, options.args];
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...options.env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = `http://127.0.0.1:${options.port}`;
  const server: ServerProcess = {
    name: options.name,
    url,
    pid: child.pid!,
    child,
    logFile,
    rssMb: () => rssMb(child.pid!),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 20_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited with ${child.exitCode}; see ${logFile}`);
    try {
      const response = await request(`${url}${options.healthPath}`);
      await response.body.dump();
      if (response.statusCode < 300) return server;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`${options.name} did not come up; see ${logFile}`);
    }
    await sleep(50);
  }
}

/**
 * A peer's configuration for the benchmarks: the per-address rate limit off, since every
 * request of a load generator comes from 127.0.0.1 (real clients come from many addresses),
 * and the instance quotas raised: bench/single-peer.ts registers new instances for as long as
 * it runs, over 700,000 at 25,000 a second into 50 services (the default quota is 10,000 a
 * service), and the bare server it is compared with has none.
 */
function unlimitedConfigFile(): string {
  const file = join(tmpdir(), `registry-bench-unlimited-${process.pid}.json`);
  writeFileSync(file, JSON.stringify({ limits: { rateLimitPerSecond: 0, instancesPerServiceMax: 10_000_000, instancesPerNamespaceMax: 100_000_000 } }));
  return file;
}

/**
 * A registry peer on its own, from the compiled dist (run `npm run build` first). `main` runs
 * another build's entry point; `unlimited: false` leaves out the config file that switches the
 * rate limit off and raises the quotas (for builds older than those settings).
 */
/**
 * The Node flags benchmark peers run with: the peer's own (src/node-flags.ts), or those of
 * `BENCH_PEER_NODE_FLAGS` (space-separated; empty for none) to measure what they change, as
 * docs/deployment.md does: `BENCH_PEER_NODE_FLAGS= npx tsx bench/memory.ts`.
 */
const peerNodeFlags: readonly string[] =
  process.env.BENCH_PEER_NODE_FLAGS === undefined ? PEER_NODE_FLAGS : process.env.BENCH_PEER_NODE_FLAGS.split(' ').filter(Boolean);

export async function startPeer(
  name: string,
  options: { pinned: boolean; logLevel?: string; extraArgs?: string[]; main?: string; unlimited?: boolean },
): Promise<ServerProcess> {
  const port = await freePort();
  return startServer({
    name,
    command: process.execPath,
    // The flags every peer runs with (`npm start`, the image), so the figures are of what users run.
    args: [
      ...peerNodeFlags,
      options.main ?? 'dist/main.js',
      ...(options.unlimited === false ? [] : ['--config', unlimitedConfigFile()]),
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--log-level',
      options.logLevel ?? 'info',
      ...(options.extraArgs ?? []),
    ],
    pinned: options.pinned,
    healthPath: '/readyz',
    port,
  });
}

/**
 * The bare fastify reference server (bench/reference-server.ts), run through tsx; `minimalAnswer`
 * has it answer its stored fields only, not the peer's answer shape.
 */
export async function startReference(name: string, options: { pinned: boolean; minimalAnswer?: boolean }): Promise<ServerProcess> {
  const port = await freePort();
  return startServer({
    name,
    command: process.execPath,
    args: ['--import', 'tsx', 'bench/reference-server.ts', String(port), ...(options.minimalAnswer ? ['--minimal-answer'] : [])],
    pinned: options.pinned,
    healthPath: '/healthz',
    port,
  });
}

/** A bare node:http server answering every path with the bytes of `file` (the reference). */
export async function startBare(file: string, pinned: boolean): Promise<ServerProcess> {
  const port = await freePort();
  const code = `const http=require('node:http');const fs=require('node:fs');const body=fs.readFileSync(process.argv[2]);` +
    `http.createServer((q,s)=>{s.writeHead(200,{'content-type':'application/json; charset=utf-8','content-length':body.length});s.end(body)}).listen(Number(process.argv[1]),'127.0.0.1')`;
  return startServer({ name: 'bare-bytes', command: process.execPath, args: ['-e', code, String(port), file], pinned, healthPath: '/', port });
}

/**
 * The stack's ceiling: a bare fastify server, the framework the registry is built on and
 * nothing of the registry's, answering every path with the bytes of `file`.
 */
export async function startBareFastify(file: string, pinned: boolean): Promise<ServerProcess> {
  const port = await freePort();
  const fastifyPath = createRequire(import.meta.url).resolve('fastify');
  const code = `const app=require(process.argv[3])({logger:false});const body=require('node:fs').readFileSync(process.argv[2]);` +
    `app.get('/*',(q,r)=>{r.type('application/json; charset=utf-8').send(body)});app.listen({port:Number(process.argv[1]),host:'127.0.0.1'})`;
  return startServer({ name: 'bare-fastify-bytes', command: process.execPath, args: ['-e', code, String(port), file, fastifyPath], pinned, healthPath: '/', port });
}

/**
 * CPU a process has used so far, in ms, user and system apart (from /proc/<pid>/stat, in
 * clock ticks of 10 ms). Linux only.
 */
export function cpuMsOf(pid: number): { userMs: number; systemMs: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (in parentheses) may hold spaces: fields are counted after its end.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { userMs: Number(fields[11]) * 10, systemMs: Number(fields[12]) * 10 };
}

/** User + system CPU of a process so far, in ms. */
export function totalCpuMsOf(pid: number): number {
  const { userMs, systemMs } = cpuMsOf(pid);
  return userMs + systemMs;
}

/** VmRSS of a process, in MB. */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) / 1024;
}
