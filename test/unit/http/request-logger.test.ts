import { describe, expect, it, vi } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import { buildServer } from '../../../src/http/server.js';
import { lazyRequestLogger } from '../../../src/http/request-logger.js';
import { createPinoLogger } from '../../../src/log/pino.js';
import { createTestNode } from '../../support/node.js';

/** A pino logger writing JSON lines into `lines`. */
function recorded(level: 'info' | 'debug') {
  const lines: Record<string, unknown>[] = [];
  const logger = createPinoLogger(level, { write: (chunk: string) => void lines.push(JSON.parse(chunk) as Record<string, unknown>) });
  return { lines, logger };
}

const make = (parent: FastifyBaseLogger, bindings: Record<string, unknown>, options: object = {}) =>
  (lazyRequestLogger as unknown as (logger: FastifyBaseLogger, bindings: object, options: object) => FastifyBaseLogger)(parent, bindings, options);

describe("a request's logger", () => {
  it('is made on its first line only, with the request bindings, and serves every line after it', () => {
    const { lines, logger } = recorded('info');
    const child = vi.spyOn(logger, 'child');
    const log = make(logger, { reqId: 'req-7' });
    expect(log.level).toBe('info');
    log.debug('below the level');
    expect(child).toHaveBeenCalledTimes(1);
    log.error({ code: 'X' }, 'request failed');
    log.warn('again');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toMatchObject([{ level: 50, reqId: 'req-7', code: 'X', msg: 'request failed' }, { level: 40, reqId: 'req-7', msg: 'again' }]);
  });

  it('makes no child for a request that never logs', () => {
    const { logger } = recorded('info');
    const child = vi.spyOn(logger, 'child');
    const log = make(logger, { reqId: 'req-8' });
    expect(log.level).toBe('info');
    expect(child).not.toHaveBeenCalled();
  });

  it('keeps a level the route set, and its own children carry the request bindings', () => {
    const { lines, logger } = recorded('info');
    const log = make(logger, { reqId: 'req-9' }, { level: 'warn' });
    expect(log.level).toBe('warn');
    log.info('not at warn');
    log.child({ part: 'x' }).warn('from a child');
    expect(lines).toMatchObject([{ level: 40, reqId: 'req-9', part: 'x', msg: 'from a child' }]);
    log.level = 'info';
    log.info('now at info');
    expect(lines.at(-1)).toMatchObject({ level: 30, reqId: 'req-9', msg: 'now at info' });
  });

  it("is what a peer's routes log through: the debug request line carries the request id", async () => {
    const { lines, logger } = recorded('debug');
    const { node } = await createTestNode();
    const app = await buildServer({ node, logger });
    try {
      await app.ready();
      expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
      expect(lines.find((line) => line.msg === 'request')).toMatchObject({ level: 20, url: '/healthz', status: 200, reqId: expect.any(String), component: 'http' });
    } finally {
      await app.close();
    }
  });
});
