import { describe, expect, it } from 'vitest';
import { SseParser, type SseItem } from '../../../src/client/sse.js';

/** Feeds `chunks` one by one and returns everything parsed. */
function parse(chunks: string[]): SseItem[] {
  const parser = new SseParser();
  return chunks.flatMap((chunk) => parser.push(chunk));
}

const event = (name: string, data: string, id?: string): SseItem => ({ kind: 'event', event: name, data, id });

describe('SseParser', () => {
  const stream = 'retry: 1000\n: watching orders in default\n\nevent: snapshot\nid: 12\ndata: {"a":1}\n\n: keep-alive\n\nevent: delta\nid: 14\ndata: {"b":2}\n\n';
  const expected: SseItem[] = [
    { kind: 'comment', text: 'watching orders in default' },
    event('snapshot', '{"a":1}', '12'),
    { kind: 'comment', text: 'keep-alive' },
    event('delta', '{"b":2}', '14'),
  ];

  it('parses a stream as the peer writes it', () => {
    const parser = new SseParser();
    expect(parser.push(stream)).toEqual(expected);
    expect(parser.retryMs).toBe(1000);
  });

  it('gives the same events whatever the chunk boundaries (every split point, and one character at a time)', () => {
    for (let split = 0; split <= stream.length; split++) {
      expect(parse([stream.slice(0, split), stream.slice(split)]), `split at ${split}`).toEqual(expected);
    }
    expect(parse([...stream])).toEqual(expected);
  });

  it('handles CRLF and CR line ends, also a CRLF split between chunks', () => {
    const crlf = stream.replaceAll('\n', '\r\n');
    const cr = stream.replaceAll('\n', '\r');
    expect(parse([crlf])).toEqual(expected);
    expect(parse([cr])).toEqual(expected);
    for (let split = 0; split <= crlf.length; split++) {
      expect(parse([crlf.slice(0, split), crlf.slice(split)]), `CRLF split at ${split}`).toEqual(expected);
    }
    // A CR ending one chunk, then a lone LF starting the next, is one line end, not two.
    expect(parse(['data: x\r', '\n', '\r\n'])).toEqual([event('message', 'x')]);
    // ...but a CR then a CR is two line ends: the event is dispatched.
    expect(parse(['data: x\r', '\r'])).toEqual([event('message', 'x')]);
  });

  it('joins multi-line data with LF and keeps the spaces after the first one', () => {
    expect(parse(['data: first\ndata:second\ndata:  third\ndata\n\n'])).toEqual([event('message', 'first\nsecond\n third\n')]);
  });

  it('follows the format on fields: no colon, unknown fields, empty events, ids, a leading BOM', () => {
    expect(parse(['\uFEFFevent: x\nfoo: bar\ndata: 1\n\n'])).toEqual([event('x', '1')]);
    // An event with no data line is not dispatched, and its type does not leak into the next.
    expect(parse(['event: lonely\n\ndata: 2\n\n'])).toEqual([event('message', '2')]);
    // An id with a NUL is ignored; retry needs digits only.
    const parser = new SseParser();
    expect(parser.push('id: a\0b\nretry: 5s\ndata: 3\n\n')).toEqual([event('message', '3')]);
    expect(parser.retryMs).toBeUndefined();
    // A BOM is only dropped at the very start of the stream.
    expect(parse(['data: a\n\n', '\uFEFFdata: b\n\n'])).toEqual([event('message', 'a')]);
  });

  it('holds back an unfinished line and event until they end', () => {
    const parser = new SseParser();
    expect(parser.push('event: delta\ndata: {"long":')).toEqual([]);
    expect(parser.pendingChars).toBeGreaterThan(0);
    expect(parser.push('"value"}\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([event('delta', '{"long":"value"}')]);
    expect(parser.pendingChars).toBe(0);
  });

  it('parses a long line that arrives in many small chunks', () => {
    const data = 'x'.repeat(2_000_000);
    const parser = new SseParser();
    const items: SseItem[] = [];
    for (let i = 0; i < data.length; i += 1_000) items.push(...parser.push(i === 0 ? `data: ${data.slice(0, 1_000)}` : data.slice(i, i + 1_000)));
    items.push(...parser.push('\n\n'));
    expect(items).toEqual([event('message', data)]);
  });
});
