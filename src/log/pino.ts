import { pino, type Logger as PinoLogger } from 'pino';
import type { LogLevel } from '../config/load.js';

/**
 * The production logger: JSON lines on stdout, written synchronously so that nothing is lost
 * when the process exits. Authorization headers are redacted should anything log a request.
 */
export function createPinoLogger(level: LogLevel): PinoLogger {
  return pino({
    level,
    base: { pid: process.pid },
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.token'], censor: '[redacted]' },
  });
}
