import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ConfigError, readConfigFile, resolveConfig } from '../config/load.js';
import { prettyLineFormatter } from '../log/pino.js';
import { PEER_NODE_FLAGS } from '../node-flags.js';

const mainScript = fileURLToPath(new URL('../main.js', import.meta.url));

/** The arguments of one peer's process: the Node flags every peer runs with, then the peer's own. */
export function peerArgv(configPath: string, id: string, extraArgs: readonly string[]): string[] {
  return [...PEER_NODE_FLAGS, mainScript, '--config', configPath, '--id', id, ...extraArgs];
}

/**
 * `npm run cluster` and `registry cluster`: starts every peer of a cluster file on this machine, each as its own
 * process, in one terminal; every output line is prefixed with the peer's id, and made
 * human-readable (pino-pretty) when the launcher's standard output is a terminal (the peers
 * write JSON: theirs is a pipe). Ctrl-C (or
 * SIGTERM) stops them all cleanly; the launcher exits when the last one has.
 */
export async function runLocalCluster(configPath: string, extraArgs: string[]): Promise<void> {
  const file = await readConfigFile(configPath);
  const ids = ((file as { peers?: { id?: unknown }[] }).peers ?? []).map((peer) => String(peer.id));
  if (ids.length === 0) throw new ConfigError('peers', `${configPath} lists no peers`);
  for (const id of ids) resolveConfig(file, {}, { id });

  const children = new Map<string, ChildProcess>();
  const width = Math.max(...ids.map((id) => id.length));
  const format = process.stdout.isTTY ? prettyLineFormatter(process.stdout.hasColors()) : (line: string) => `${line}\n`;
  for (const id of ids) {
    const child = spawn(process.execPath, peerArgv(configPath, id, extraArgs), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.set(id, child);
    const prefix = `[${id.padEnd(width)}] `;
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => process.stdout.write(`${prefix}${format(line)}`));
    }
    child.on('exit', (code, signal) => {
      children.delete(id);
      process.stdout.write(`${prefix}exited (${signal ?? code})\n`);
      if (children.size === 0) process.exit(0);
    });
  }
  const stopAll = (signal: NodeJS.Signals) => {
    process.stdout.write(`stopping ${children.size} peer(s)\n`);
    for (const child of children.values()) child.kill(signal);
  };
  process.on('SIGINT', () => stopAll('SIGTERM'));
  process.on('SIGTERM', () => stopAll('SIGTERM'));
}
