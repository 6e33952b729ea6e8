import type { Clock } from '../clock/clock.js';
import type { Logger } from '../log/logger.js';
import { LineBudget } from '../log/line-budget.js';

/** Longest text a client sends that goes into a log line (a NACK's message may be 4 MB). */
export const CLIENT_TEXT_MAX_CHARS = 512;

/** Lines per second about what clients do (NACKs, refused requests) before they are only counted. */
export const CLIENT_LINES_PER_SECOND = 10;

/** `text` cut to `max` characters, saying how long it was when cut. */
export function clip(text: string, max = CLIENT_TEXT_MAX_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}... (${text.length} characters, cut)`;
}

/** A field of a client's: a string clipped, a list cut to its first 10 items, each clipped. */
function clipValue(value: unknown): unknown {
  if (typeof value === 'string') return clip(value);
  if (Array.isArray(value)) return value.slice(0, 10).map((item: unknown) => (typeof item === 'string' ? clip(item, 128) : item));
  return value;
}

/**
 * The xDS listener's warn lines about clients: a NACK or a refused stream is the client's doing,
 * and any client may cause as many as it likes, so each text it sent is clipped
 * (`CLIENT_TEXT_MAX_CHARS`) and the lines are throttled (`CLIENT_LINES_PER_SECOND`, the rest
 * counted in one summary line a second, src/log/line-budget.ts). Without this one client
 * sending NACKs with 4 MB messages wrote 4 MB of log per NACK (issue 33).
 */
export class ClientLog {
  private readonly budget: LineBudget;

  constructor(
    private readonly logger: Logger,
    clock: Clock,
    linesPerSecond = CLIENT_LINES_PER_SECOND,
  ) {
    this.budget = new LineBudget(clock, linesPerSecond, (count, sinceMs) =>
      logger.warn({ suppressed: count, sinceMs }, 'xds: more NACKs and refused requests than the log takes; these were counted, not logged (xds metrics)'),
    );
  }

  /** A warn line with every string field clipped, unless this second's budget is spent. */
  warn(fields: Record<string, unknown>, message: string): void {
    if (!this.budget.allow()) return;
    const clipped: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(fields)) clipped[key] = clipValue(value);
    this.logger.warn(clipped, message);
  }

  /** Writes the summary of the lines counted so far (on close). */
  flush(): void {
    this.budget.flush();
  }
}
