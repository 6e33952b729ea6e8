/**
 * An incremental parser for `text/event-stream` (the WHATWG server-sent events format): feed
 * it decoded text in chunks of any size and it returns the complete events and comments.
 * Lines end with LF, CRLF or CR, also when a CRLF is split between two chunks; `data` lines
 * of one event are joined with LF; a leading byte-order mark is dropped; unknown fields are
 * ignored, as the format requires.
 */
export interface SseEvent {
  kind: 'event';
  /** The `event:` field; `message` when absent. */
  event: string;
  data: string;
  /** The `id:` field of this event, if it had one. */
  id: string | undefined;
}

export interface SseComment {
  kind: 'comment';
  /** The text after the colon, one leading space removed. */
  text: string;
}

export type SseItem = SseEvent | SseComment;

export class SseParser {
  /** The start of a line whose end has not arrived yet, in pieces (joined once, when it ends). */
  private pending: string[] = [];
  private pendingLength = 0;
  private started = false;
  /** The last chunk ended with CR: an LF opening the next one ends the same line. */
  private afterCr = false;
  private eventType = '';
  private dataLines: string[] = [];
  private eventId: string | undefined;
  /** The last `retry:` field, in ms (the server's reconnection hint). */
  retryMs: number | undefined;

  /** Parses one chunk; returns what it completed, in order. */
  push(chunk: string): SseItem[] {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.afterCr && text.startsWith('\n')) text = text.slice(1);
    this.afterCr = false;
    const out: SseItem[] = [];
    let start = 0;
    for (;;) {
      const end = nextLineEnd(text, start);
      if (end < 0) break;
      let line = text.slice(start, end);
      if (this.pending.length > 0) {
        line = this.pending.join('') + line;
        this.pending = [];
        this.pendingLength = 0;
      }
      if (text[end] === '\r' && end + 1 === text.length) {
        // A CR at the very end: an LF may follow in the next chunk.
        this.afterCr = true;
        start = end + 1;
      } else {
        start = text[end] === '\r' && text[end + 1] === '\n' ? end + 2 : end + 1;
      }
      this.line(line, out);
    }
    if (start < text.length) {
      this.pending.push(text.slice(start));
      this.pendingLength += text.length - start;
    }
    return out;
  }

  /** Text held back waiting for the end of its line. */
  get pendingChars(): number {
    return this.pendingLength;
  }

  private line(line: string, out: SseItem[]): void {
    if (line === '') {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(':')) {
      out.push({ kind: 'comment', text: stripSpace(line.slice(1)) });
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : stripSpace(line.slice(colon + 1));
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.dataLines.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.eventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        // The format says: ignore any other field.
        break;
    }
  }

  private dispatch(out: SseItem[]): void {
    // An event without data lines is not dispatched (the format's rule), but it is reset.
    if (this.dataLines.length > 0) {
      out.push({ kind: 'event', event: this.eventType || 'message', data: this.dataLines.join('\n'), id: this.eventId });
    }
    this.eventType = '';
    this.dataLines = [];
    this.eventId = undefined;
  }
}

function stripSpace(value: string): string {
  return value.startsWith(' ') ? value.slice(1) : value;
}

/** Index of the next CR or LF at or after `from`, or -1. */
function nextLineEnd(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 10 || code === 13) return i;
  }
  return -1;
}
