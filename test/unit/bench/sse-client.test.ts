import { describe, expect, it } from 'vitest';
import { idsInDelta, SseParser } from '../../../bench/sse-client.js';

describe('the benchmark SSE parser', () => {
  it('reads events split across chunks, with comments, ids and multi-line data', () => {
    const parser = new SseParser();
    expect(parser.push(': keep-alive\nevent: snap')).toEqual([]);
    expect(parser.push('shot\ndata: {"service":"a",\r\ndata: "x":1}\nid: 7\n\nevent: delta\ndata: {}\n')).toEqual([
      { event: 'snapshot', data: '{"service":"a",\n"x":1}', id: '7' },
    ]);
    expect(parser.push('\n')).toEqual([{ event: 'delta', data: '{}', id: '7' }]);
  });

  it('names an event without an event line "message"', () => {
    expect(new SseParser().push('data:hello\n\n')).toEqual([{ event: 'message', data: 'hello' }]);
  });

  it('finds the instance ids of a delta, as objects or bare ids', () => {
    expect(idsInDelta({ service: 's', added: [{ instanceId: 'a' }, 'b'], changed: [{ instanceId: 'c' }], removed: ['d'] })).toEqual(['a', 'b', 'c']);
    expect(idsInDelta({ service: 's' })).toEqual([]);
  });
});
