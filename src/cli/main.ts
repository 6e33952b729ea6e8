#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { ConfigError } from '../config/load.js';
import { CliError, EXIT_PEER, EXIT_USAGE, PeerClient, usageError } from './client.js';
import { addPeerOptions } from './peer-options.js';
import { listCommand, peersCommand, showCommand, waitReadyCommand } from './read-commands.js';
import { cancelCommand, registerCommand } from './write-commands.js';
import { watchCommand } from './watch-command.js';

/**
 * `registry`: the command line (docs/cli.md). `start` and `cluster` run peers; the other
 * commands talk to any peer by URL. Exit codes: 0 done, 1 the peer could not be reached or
 * refused, 2 bad usage, 130 a second Ctrl-C while `register --heartbeat` cleans up.
 */

interface ClientFlags {
  url: string;
  namespace?: string;
  token?: string;
  ca?: string;
  json?: boolean;
}

function integer(name: string, min: number, max: number) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value) || Number(value) < min || Number(value) > max) throw usageError(`${name}: must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
    return Number(value);
  };
}

function number(name: string) {
  return (value: string): number => {
    const parsed = Number(value);
    if (value.trim() === '' || !Number.isFinite(parsed)) throw usageError(`${name}: must be a number (got ${JSON.stringify(value)})`);
    return parsed;
  };
}

/** `30s`, `500ms`, `2m` or plain seconds. */
function durationMs(name: string) {
  return (value: string): number => {
    const match = /^(\d{1,9})(ms|s|m)?$/.exec(value);
    if (!match) throw usageError(`${name}: must be a duration such as 500ms, 30s or 2m (got ${JSON.stringify(value)})`);
    const amount = Number(match[1]);
    return match[2] === 'ms' ? amount : match[2] === 'm' ? amount * 60_000 : amount * 1_000;
  };
}

function keyValue(value: string, previous: Record<string, string>): Record<string, string> {
  const equals = value.indexOf('=');
  if (equals <= 0) throw usageError(`--metadata: must be key=value (got ${JSON.stringify(value)})`);
  return { ...previous, [value.slice(0, equals)]: value.slice(equals + 1) };
}

/** The options every client command takes. */
function clientCommand(program: Command, name: string, description: string): Command {
  return program
    .command(name)
    .description(description)
    .addOption(new Option('--url <url>', 'the peer to talk to').env('REGISTRY_URL').default('http://127.0.0.1:8761'))
    .addOption(new Option('-n, --namespace <name>', 'namespace (default: default)').env('REGISTRY_NAMESPACE'))
    .addOption(new Option('--token <token>', 'sent as Authorization: Bearer <token>').env('REGISTRY_TOKEN'))
    .addOption(new Option('--ca <file>', "CA certificate (PEM) to trust for an https peer").env('REGISTRY_TLS_CA'))
    .option('--json', 'machine-readable output');
}

function client(flags: ClientFlags): PeerClient {
  if (flags.ca !== undefined) {
    let ca: Buffer;
    try {
      ca = readFileSync(flags.ca);
    } catch (error) {
      throw usageError(`--ca: cannot read ${flags.ca}: ${(error as Error).message}`);
    }
    // Every call of this command (and the watch stream) goes through an agent that trusts it;
    // it is closed with the global dispatcher when the command is done.
    setGlobalDispatcher(new Agent({ connect: { ca } }));
  }
  return new PeerClient({ url: flags.url, namespace: flags.namespace, token: flags.token });
}

export function buildProgram(): Command {
  const program = new Command()
    .name('registry')
    .description('Run and inspect a peer-to-peer service registry.')
    .showHelpAfterError()
    .exitOverride();

  addPeerOptions(program.command('start').description('start one peer (the same as npm start)')).action(async (flags) => {
    // Loaded on demand: the client commands need none of the server, and start faster without it.
    const { startPeer } = await import('../peer.js');
    await startPeer(flags, process.env);
  });

  program
    .command('cluster')
    .description('start every peer of a cluster file on this machine, in one terminal (the same as npm run cluster)')
    .option('--config <file>', 'cluster file', 'cluster.example.json')
    .argument('[peerArgs...]', 'extra flags for every peer, after --')
    .action(async (peerArgs: string[], flags: { config: string }) => {
      const { runLocalCluster } = await import('./local-cluster.js');
      await runLocalCluster(flags.config, peerArgs);
    });

  clientCommand(program, 'ls', 'list the services, or the instances of one service (any status)')
    .argument('[service]')
    .action(async (service: string | undefined, flags: ClientFlags) => listCommand(client(flags), service, flags));

  clientCommand(program, 'show', 'show every instance of a service in full')
    .argument('<service>')
    .action(async (service: string, flags: ClientFlags) => showCommand(client(flags), service, flags));

  clientCommand(program, 'peers', "this peer's view of the cluster: peers, states, replication, eviction guards").action(
    async (flags: ClientFlags) => peersCommand(client(flags), flags),
  );

  clientCommand(program, 'register', 'register an instance (or --count of them), for testing')
    .argument('<service>')
    .argument('<host>')
    .argument('<port>', 'port (the first one with --count)', integer('port', 1, 65535))
    .option('--id <id>', 'instance id (default host:port; with --count, id-0, id-1...)')
    .option('--status <status>', 'UP, DOWN, STARTING or OUT_OF_SERVICE')
    .option('--zone <zone>', 'zone')
    .option('--group <group>', 'group inside the service (default DEFAULT_GROUP)')
    .option('--weight <weight>', 'weight', number('--weight'))
    .option('--metadata <key=value>', 'metadata (repeat for more)', keyValue, {})
    .option('--lease-ms <ms>', 'lease duration', integer('--lease-ms', 1, 2 ** 31))
    .option('--count <n>', 'register n instances, ports port..port+n-1, with progress', integer('--count', 1, 65535), 1)
    .option('--concurrency <n>', 'requests in flight at once during a bulk load', integer('--concurrency', 1, 256), 16)
    .option('--heartbeat', 'keep heartbeating until Ctrl-C', false)
    .action(async (service: string, host: string, port: number, flags: ClientFlags & Parameters<typeof registerCommand>[4]) =>
      registerCommand(client(flags), service, host, port, flags),
    );

  clientCommand(program, 'cancel', 'cancel an instance')
    .argument('<service>')
    .argument('<id>')
    .action(async (service: string, id: string, flags: ClientFlags) => cancelCommand(client(flags), service, id, flags));

  clientCommand(program, 'watch', 'print the changes of a service (or of all) live, until Ctrl-C')
    .argument('[service]')
    .action(async (service: string | undefined, flags: ClientFlags) => watchCommand(client(flags), service, flags));

  clientCommand(program, 'wait-ready', 'wait until the peer is ready and sees its peers up, with progress')
    .option('--peers <n>', 'peers (this one included) that must be up; default every peer it knows', integer('--peers', 1, 10_000))
    .option('--timeout <duration>', 'give up after this long (exit 1)', durationMs('--timeout'), 60_000)
    .action(async (flags: ClientFlags & { peers?: number; timeout: number }) =>
      waitReadyCommand(client(flags), { json: flags.json, peers: flags.peers, timeoutMs: flags.timeout }),
    );

  return program;
}

/** Runs the command line; returns the exit code (commands that serve, like start, never return). */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_USAGE;
    if (error instanceof CliError) {
      process.stderr.write(`registry: ${error.message}\n`);
      return error.exitCode;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`registry: bad configuration: ${error.message}\n`);
      return EXIT_USAGE;
    }
    process.stderr.write(`registry: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT_PEER;
  }
}

const code = await main(process.argv);
process.exitCode = code;
// `start` and `cluster` keep serving. A client command is done: close undici's idle keep-alive
// connections so the process ends now (and stdout drains) instead of seconds later.
if (!['start', 'cluster'].includes(process.argv[2] ?? '')) await getGlobalDispatcher().close();
