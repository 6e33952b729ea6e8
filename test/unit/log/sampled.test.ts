import { describe, expect, it } from 'vitest';
import { CENSOR } from '../../../src/log/redact.js';
import { MESSAGE_MAX_CHARS, sampledLogger } from '../../../src/log/sampled.js';
import { FakeClock } from '../../support/fake-clock.js';
import { recordingLogger } from '../../support/recording-logger.js';

describe('the adapters\' logger: redacted and sampled', () => {
  it('gives each message a few lines a second and tells the rest in one summary line', async () => {
    const clock = new FakeClock();
    const sink = recordingLogger();
    const log = sampledLogger(sink, clock, 3).child({ component: 'xds' });
    for (let i = 0; i < 1_000; i++) log.warn({ node: `n${i}` }, 'xDS NACK');
    log.info('other message');
    expect(sink.lines.map((line) => line.msg)).toEqual(['xDS NACK', 'xDS NACK', 'xDS NACK', 'other message']);
    await clock.advance(1_000);
    log.warn({ node: 'later' }, 'xDS NACK');
    expect(sink.lines.slice(4).map((line) => [line.msg, line.fields.suppressed ?? null])).toEqual([
      ['xDS NACK (and 997 more like it, not logged one by one)', 997],
      ['xDS NACK', null],
    ]);
    expect(sink.lines[4]!.fields.component).toBe('xds');
  });

  it('flush() writes the pending summaries without waiting for the next line', () => {
    const sink = recordingLogger();
    const log = sampledLogger(sink, new FakeClock(), 1);
    log.error('refused');
    log.error('refused');
    log.flush();
    expect(sink.lines.map((line) => line.fields.suppressed ?? null)).toEqual([null, 1]);
  });

  it('redacts credentials in fields, URLs, bindings and the message, and cuts a long message', () => {
    const sink = recordingLogger();
    const log = sampledLogger(sink, new FakeClock()).child({ url: '/v1/kv?token=bind' });
    log.info({ url: '/v1/catalog/services?token=abc', headers: { 'x-consul-token': 'abc' } }, 'GET http://u:p@h/x?token=abc');
    log.warn(`client says: ${'x'.repeat(4_000_000)}`);
    const [first, second] = sink.lines;
    expect(first).toEqual({
      level: 'info',
      msg: `GET http://${CENSOR}@h/x?token=${CENSOR}`,
      fields: { url: `/v1/catalog/services?token=${CENSOR}`, headers: { 'x-consul-token': CENSOR } },
    });
    expect(JSON.stringify(sink.lines)).not.toMatch(/abc|bind|u:p@/);
    expect(second!.msg.length).toBeLessThan(MESSAGE_MAX_CHARS + 40);
    expect(second!.msg).toMatch(/\(4000013 characters\)$/);
  });

  it('leaves debug lines unsampled (off in production) but still redacted', () => {
    const sink = recordingLogger();
    const log = sampledLogger(sink, new FakeClock(), 1);
    for (let i = 0; i < 5; i++) log.debug({ url: '/x?token=abc' }, 'request');
    expect(sink.lines).toHaveLength(5);
    expect(sink.lines[0]!.fields.url).toBe(`/x?token=${CENSOR}`);
  });
});
