import { createRequire } from 'node:module';
import { destination as fileDestination, pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type { prettyFactory } from 'pino-pretty';
import type { LogLevel } from '../config/load.js';
import { redactSecrets, redactText } from './redact.js';

/**
 * How pino-pretty writes a line for people: local time, level, message, then the fields on the
 * same line (one event, one line, as in the JSON form); pid and hostname left out.
 */
function prettyOptions(colorize: boolean) {
  return { colorize, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' };
}

/**
 * A formatter from one JSON log line to its human-readable form (with the end of line); a line
 * that is not JSON comes back as it is. For `npm run cluster`, whose peers write JSON into a
 * pipe that the launcher shows on a terminal.
 */
export function prettyLineFormatter(colorize: boolean): (jsonLine: string) => string {
  const pretty = loadModule('pino-pretty') as { prettyFactory: typeof prettyFactory };
  return pretty.prettyFactory(prettyOptions(colorize));
}

/**
 * pino-pretty (30 modules and their dependencies, some 3 MB of RSS) is loaded on the first
 * line formatted for people, not at start: a peer whose output goes to a pipe, a file or a
 * log collector never formats one. It is CommonJS, so it loads synchronously through require.
 */
const loadModule = createRequire(import.meta.url);

/**
 * The production logger. On a terminal (standard output is a TTY: someone ran `npm start`),
 * human-readable lines through pino-pretty; anywhere else (a pipe, a file, a container's log
 * collector), JSON lines, one per event, as before. Both are written synchronously so that
 * nothing is lost when the process exits. Credentials are redacted should anything log a
 * request or a config: authorization headers, peer signatures, tokens and the cluster
 * secret. `destination` is for tests (JSON into it; `options.pretty` for the terminal form).
 */
export function createPinoLogger(level: LogLevel, destination?: DestinationStream, options: { pretty?: boolean } = {}): PinoLogger {
  const loggerOptions = {
    level,
    base: { pid: process.pid },
    // Credentials never reach the log: see redact.ts (cheaper than pino's wildcard `redact`).
    formatters: { log: redactSecrets, bindings: redactSecrets },
    // The written line itself, once serialized: what a serializer adds after the formatters
    // (fastify's `req` serializer writes the URL, `?token=` included) is redacted here.
    hooks: { streamWrite: redactText },
  };
  const humans = options.pretty ?? (destination === undefined && process.stdout.isTTY === true);
  if (humans) {
    // Each JSON line formatted as it is written, synchronously (pino-pretty's own stream form
    // goes through asynchronous transforms, and the last lines before an exit could be lost).
    const format = prettyLineFormatter(destination === undefined && process.stdout.hasColors?.() === true);
    const target = destination ?? fileDestination({ dest: 1, sync: true });
    return pino(loggerOptions, { write: (line: string) => target.write(format(line)) });
  }
  return destination ? pino(loggerOptions, destination) : pino(loggerOptions);
}
