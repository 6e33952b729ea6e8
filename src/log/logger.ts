/**
 * The logging interface the core depends on: the subset of pino's API we use, so `registry/`,
 * `lease/` and `replication/` never import a logging framework. Production passes a pino
 * logger (src/log/pino.ts); tests pass `silentLogger` or a recording one.
 */
export interface LogFn {
  (fields: object, message: string): void;
  (message: string): void;
}

export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

const noop = (): void => {};

/** A logger that drops everything. */
export const silentLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentLogger,
};
