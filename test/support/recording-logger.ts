import type { LogFn, Logger } from '../../src/log/logger.js';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that keeps every line (with its child bindings) for assertions. */
export function recordingLogger(lines: LogLine[] = [], bindings: Record<string, unknown> = {}): Logger & { lines: LogLine[] } {
  const at =
    (level: LogLine['level']): LogFn =>
    (fieldsOrMessage: object | string, message?: string) => {
      if (typeof fieldsOrMessage === 'string') lines.push({ level, msg: fieldsOrMessage, fields: { ...bindings } });
      else lines.push({ level, msg: message ?? '', fields: { ...bindings, ...fieldsOrMessage } });
    };
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => recordingLogger(lines, { ...bindings, ...more }),
  };
}
