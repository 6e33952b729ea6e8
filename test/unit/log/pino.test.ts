import { describe, expect, it } from 'vitest';
import { createPinoLogger, prettyLineFormatter } from '../../../src/log/pino.js';

/** A destination that keeps what is written. */
function sink() {
  const written: string[] = [];
  return { written, write: (chunk: string) => void written.push(String(chunk)) };
}

describe('the peer logger', () => {
  it('writes JSON lines where no one reads them on a terminal', () => {
    const out = sink();
    createPinoLogger('info', out).info({ peer: 'peer-a' }, 'registry peer started');
    expect(JSON.parse(out.written.join(''))).toMatchObject({ level: 30, peer: 'peer-a', msg: 'registry peer started' });
  });

  it('writes one readable line per event for a terminal, credentials still redacted', async () => {
    const out = sink();
    const logger = createPinoLogger('info', out, { pretty: true });
    logger.info({ peer: 'peer-a', token: 's3cret' }, 'registry peer started');
    logger.debug('not at info');
    await new Promise((resolve) => setImmediate(resolve));
    const text = out.written.join('');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: registry peer started \{"peer":"peer-a","token":"\[redacted\]"\}\n$/);
    expect(text).not.toContain('s3cret');
  });

  it('turns the JSON lines of npm run cluster\'s peers into the same form, and leaves other lines as they are', () => {
    const format = prettyLineFormatter(false);
    expect(format(JSON.stringify({ level: 40, time: Date.UTC(2026, 0, 1), pid: 7, peer: 'peer-b', msg: 'peer down' }))).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: peer down \{"peer":"peer-b"\}\n$/);
    expect(format('registry: bad configuration: port: must be an integer')).toBe('registry: bad configuration: port: must be an integer\n');
  });
});

describe('the production logger redacts what serializers write', () => {
  it('takes credentials out of the line as written, after serializers (fastify\'s request serializer wrote ?token= in clear text: issue 33, finding 3)', () => {
    const out = sink();
    // As fastify does: a serializer that writes the request's URL from the request object.
    const logger = createPinoLogger('info', out).child({}, { serializers: { req: (request: { url: string }) => ({ url: request.url }) } });
    logger.info({ req: { url: '/v1/agent/services?token=supersecret-0123456789&x=1' } }, 'incoming request');
    logger.info('dialing http://eureka:pa55word@peer-b:8761/eureka/ with Bearer other-secret-0123456789');
    const text = out.written.join('');
    expect(text).not.toMatch(/supersecret|other-secret|pa55word/);
    expect(text).toContain('services?token=[redacted]&x=1');
    expect(text).toContain('http://[redacted]@peer-b:8761/eureka/ with Bearer [redacted]');
  });
});
