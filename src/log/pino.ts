import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type { LogLevel } from '../config/load.js';
import { redactSecrets } from './redact.js';

/**
 * The production logger: JSON lines on stdout, written synchronously so that nothing is lost
 * when the process exits. Credentials are redacted should anything log a request or a config:
 * authorization headers, peer signatures, tokens and the cluster secret. `destination` is for
 * tests (standard output by default).
 */
export function createPinoLogger(level: LogLevel, destination?: DestinationStream): PinoLogger {
  const options = {
    level,
    base: { pid: process.pid },
    // Credentials never reach the log: see redact.ts (cheaper than pino's wildcard `redact`).
    formatters: { log: redactSecrets, bindings: redactSecrets },
  };
  return destination ? pino(options, destination) : pino(options);
}
