/**
 * The logging the client needs: the same shape as the peer's Logger (a subset of pino), so a
 * pino logger can be passed as is. Copied rather than imported so the client stands alone.
 */
export interface ClientLogFn {
  (fields: object, message: string): void;
  (message: string): void;
}

export interface ClientLogger {
  debug: ClientLogFn;
  info: ClientLogFn;
  warn: ClientLogFn;
  error: ClientLogFn;
  child(bindings: Record<string, unknown>): ClientLogger;
}

const noop = (): void => {};

/** The default: the client logs nothing unless given a logger. */
export const silentClientLogger: ClientLogger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentClientLogger,
};
