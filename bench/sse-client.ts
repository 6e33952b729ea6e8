/**
 * A server-sent events parser (the text/event-stream format: `event:`, `data:`, `id:` lines,
 * comments starting with `:`, events ended by a blank line), fed chunk by chunk as they arrive.
 * Pure, so it is tested on its own (test/unit/bench/sse-client.test.ts).
 */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private id: string | undefined;

  /** Feeds one chunk of the stream; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    this.buffer += chunk;
    const events: SseEvent[] = [];
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      const line = this.buffer.slice(0, end);
      const newline = this.buffer.startsWith('\r\n', end) ? 2 : 1;
      this.buffer = this.buffer.slice(end + newline);
      if (line === '') {
        if (this.data.length > 0 || this.event !== '') {
          events.push({ event: this.event || 'message', data: this.data.join('\n'), ...(this.id === undefined ? {} : { id: this.id }) });
        }
        this.event = '';
        this.data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') this.event = value;
      else if (field === 'data') this.data.push(value);
      else if (field === 'id') this.id = value;
    }
    return events;
  }
}

/** The delta event of the watch contract (docs/api.md, GET /v1/watch). */
export interface WatchDelta {
  namespace?: string;
  service: string;
  revision?: number;
  added?: unknown[];
  removed?: unknown[];
  changed?: unknown[];
}

/**
 * The instance ids a delta mentions as added or changed. The contract names the lists but a
 * list may carry instance objects or bare ids; both are read.
 */
export function idsInDelta(delta: WatchDelta): string[] {
  const ids: string[] = [];
  for (const item of [...(delta.added ?? []), ...(delta.changed ?? [])]) {
    if (typeof item === 'string') ids.push(item);
    else if (typeof item === 'object' && item !== null && typeof (item as { instanceId?: unknown }).instanceId === 'string') {
      ids.push((item as { instanceId: string }).instanceId);
    }
  }
  return ids;
}
