import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type { LogLevel } from '../config/load.js';

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
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'req.headers["x-registry-signature"]',
        'headers["x-registry-signature"]',
        'token',
        '*.token',
        'clusterSecret',
        '*.clusterSecret',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
