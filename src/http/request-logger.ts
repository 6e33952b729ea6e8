import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;
type LogArgs = Parameters<FastifyBaseLogger['info']>;

/**
 * A request's logger, made when the request first logs: fastify makes a child logger for
 * every request (bound to its request id), and almost no request ever logs at the levels a
 * peer runs at. Made eagerly, with fastify's check of what the factory answered, it was 3 µs
 * of a 20-instance discover in a CPU profile (`createChildLogger` and `validateLogger`). The
 * lines a request does write are the same: the child is made from the same bindings and
 * options on the first of them, and serves every line after it.
 */
class LazyRequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    // An empty options object would take pino's slower child path: pass none then.
    return (this.made ??= this.options.level !== undefined || this.options.serializers !== undefined ? this.parent.child(this.bindings, this.options) : this.parent.child(this.bindings));
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: LogArgs): void {
    this.logger.fatal(...args);
  }
  error(...args: LogArgs): void {
    this.logger.error(...args);
  }
  warn(...args: LogArgs): void {
    this.logger.warn(...args);
  }
  info(...args: LogArgs): void {
    this.logger.info(...args);
  }
  debug(...args: LogArgs): void {
    this.logger.debug(...args);
  }
  trace(...args: LogArgs): void {
    this.logger.trace(...args);
  }
  silent(...args: LogArgs): void {
    this.logger.silent(...args);
  }
  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/** fastify's `childLoggerFactory`: each request's logger, made on its first line (see LazyRequestLogger). */
export const lazyRequestLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new LazyRequestLogger(logger, bindings, options);
