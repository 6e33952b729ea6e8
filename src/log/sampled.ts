import type { Clock } from '../clock/clock.js';
import { LineBudget } from './line-budget.js';
import type { LogFn, Logger } from './logger.js';
import { redactSecrets, redactText } from './redact.js';

/**
 * The logger the adapter contract hands every protocol (src/adapters/contract.ts): what it
 * writes is redacted (credentials in fields and in the message, URLs included: redact.ts)
 * before it reaches the peer's logger, whatever that logger is, and repeated lines are
 * sampled: each message (per level) has `linesPerSecond` lines a second of its own, the rest
 * of the second's are counted and told in one summary line (`line-budget.ts`), so a client
 * that makes a protocol log a line per request (a NACK, a refused query, a malformed packet)
 * costs a few lines a second, not one per request. Debug lines are neither sampled nor
 * budgeted: they are off in production.
 */

/** Lines a second one message may have before the rest are counted; enough for any event that is not a flood. */
export const SAMPLED_LINES_PER_SECOND = 10;
/** Longest message text kept; a longer one (a client's own error text) is cut, with its length said. */
export const MESSAGE_MAX_CHARS = 512;
/** Most distinct messages with a budget of their own; past it the others share one (a bounded table). */
const MAX_BUDGETS = 256;

type Level = 'info' | 'warn' | 'error';

/** A message cut to `MESSAGE_MAX_CHARS`, its credentials censored. */
function safeMessage(message: string): string {
  const cut = message.length > MESSAGE_MAX_CHARS ? `${message.slice(0, MESSAGE_MAX_CHARS)}... (${message.length} characters)` : message;
  return redactText(cut);
}

/** Budgets per level and message, shared by a logger and its children (what floods is the message, whoever writes it). */
class Budgets {
  private readonly table = new Map<string, LineBudget>();

  constructor(
    private readonly clock: Clock,
    private readonly linesPerSecond: number,
  ) {}

  allow(level: Level, message: string, write: (count: number, sinceMs: number) => void): boolean {
    const key = this.table.size < MAX_BUDGETS || this.table.has(`${level} ${message}`) ? `${level} ${message}` : `${level} *`;
    let budget = this.table.get(key);
    if (!budget) this.table.set(key, (budget = new LineBudget(this.clock, this.linesPerSecond, write)));
    return budget.allow();
  }

  flush(): void {
    for (const budget of this.table.values()) budget.flush();
  }
}

/** A logger whose lines are redacted and sampled (see the file's comment); `flush()` writes the pending summaries. */
export interface SampledLogger extends Logger {
  child(bindings: Record<string, unknown>): SampledLogger;
  flush(): void;
}

export function sampledLogger(logger: Logger, clock: Clock, linesPerSecond: number = SAMPLED_LINES_PER_SECOND): SampledLogger {
  return wrap(logger, new Budgets(clock, linesPerSecond));
}

function wrap(logger: Logger, budgets: Budgets): SampledLogger {
  const at = (level: Level): LogFn =>
    ((first: object | string, second?: string) => {
      const fields = typeof first === 'string' ? undefined : redactSecrets(first as Record<string, unknown>);
      const message = safeMessage(typeof first === 'string' ? first : (second ?? ''));
      const summary = (count: number, sinceMs: number) =>
        logger[level]({ suppressed: count, sinceMs }, `${message} (and ${count} more like it, not logged one by one)`);
      if (!budgets.allow(level, message, summary)) return;
      if (fields === undefined) logger[level](message);
      else logger[level](fields, message);
    }) as LogFn;
  const debug = ((first: object | string, second?: string) => {
    if (typeof first === 'string') logger.debug(safeMessage(first));
    else logger.debug(redactSecrets(first as Record<string, unknown>), safeMessage(second ?? ''));
  }) as LogFn;
  return {
    debug,
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (bindings) => wrap(logger.child(redactSecrets(bindings)), budgets),
    flush: () => budgets.flush(),
  };
}
