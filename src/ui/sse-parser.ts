/**
 * Incremental parser of a server-sent events stream (the subset the registry sends: `event:`,
 * `id:`, `data:` lines and `:` comments). Pure and free of DOM or Node APIs, so the dashboard
 * (in the browser, over fetch, which can send an Authorization header where EventSource cannot)
 * and the command line (over undici) read `GET /v1/watch` the same way.
 */
export interface ServerSentEvent {
  event: string;
  id: string | undefined;
  data: string;
}

export class SseParser {
  private buffer = '';

  /** Feeds a chunk of text; returns the events it completed (comments are skipped). */
  push(chunk: string): ServerSentEvent[] {
    this.buffer += chunk.replace(/\r\n?/g, '\n');
    const events: ServerSentEvent[] = [];
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let event = 'message';
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'id') id = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0) events.push({ event, id, data: data.join('\n') });
    }
    return events;
  }
}
