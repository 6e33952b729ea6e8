/**
 * What a client sent, as it may go into a log line: a NACK's message may be 4 MB and any client
 * may send as many as it likes. Each string is clipped (`CLIENT_TEXT_MAX_CHARS`), a list cut
 * to its first 10 items. The lines themselves are sampled by the adapter contract's logger
 * (src/log/sampled.ts: 10 lines a second per message, the rest counted in one summary line).
 * Without both, one client sending NACKs with 4 MB messages wrote 4 MB of log per NACK (issue 33).
 */

/** Longest text a client sends that goes into a log line. */
export const CLIENT_TEXT_MAX_CHARS = 512;

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

/** The fields of a log line about what a client sent, each clipped. */
export function clientFields(fields: Record<string, unknown>): Record<string, unknown> {
  const clipped: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) clipped[key] = clipValue(value);
  return clipped;
}
