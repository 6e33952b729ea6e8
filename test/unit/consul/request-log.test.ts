import { afterEach, describe, expect, it } from 'vitest';
import { buildConsulApp, type ConsulApp } from '../../../src/consul/app.js';
import { LOGGED_URL_MAX_LENGTH, loggableUrl } from '../../../src/consul/request-log.js';
import type { Logger } from '../../../src/log/logger.js';
import { recordingLogger, type LogLine } from '../../support/recording-logger.js';
import { createTestNode, type TestNode } from '../../support/node.js';

const VALID = 'valid-token-abcdefghijkl0123';
const GUESSED = 'guessed-token-zyxwvu987654';
const file = { security: { tokens: [{ name: 'writer', token: VALID, namespaces: ['*'], scopes: ['write'] }] }, limits: { rateLimitPerSecond: 0 } };

/** The recording logger with what fastify asks of a logger instance (a level, fatal and trace), at `level`. */
function fastifyRecorder(lines: LogLine[], level: string): Logger {
  const wrap = (logger: Logger): Logger => {
    const out = { ...logger, level, fatal: logger.error, trace: logger.debug, child: (bindings: Record<string, unknown>) => wrap(logger.child(bindings)) };
    return out as Logger;
  };
  return wrap(recordingLogger(lines));
}

describe('the Consul listener logs', () => {
  let base: TestNode | undefined;
  let consul: ConsulApp | undefined;
  afterEach(async () => {
    await consul?.app.close();
    await base?.node.stop();
  });

  for (const level of ['info', 'debug']) {
    it(`no token, and at most one bounded line per request (at ${level})`, async () => {
      const lines: LogLine[] = [];
      base = await createTestNode({ file });
      consul = await buildConsulApp({ node: base.node, port: 8500, logger: fastifyRecorder(lines, level) });
      const { app } = consul;
      const requests = [
        { method: 'PUT' as const, url: `/v1/agent/service/register?token=${VALID}`, payload: { Name: 'web', ID: 'web-1', Address: '10.0.0.1', Port: 80 } },
        { method: 'GET' as const, url: `/v1/health/service/web?passing&token=${VALID}` },
        { method: 'GET' as const, url: `/v1/health/service/web?token=${GUESSED}` },
        { method: 'GET' as const, url: `/v1/kv/x?%74oken=${GUESSED}` },
        { method: 'GET' as const, url: `/v1/catalog/services?token=${VALID}&pad=${'x'.repeat(6_000)}` },
        { method: 'PUT' as const, url: `/v1/agent/check/pass/nothing?token=${VALID}&note=${'n'.repeat(6_000)}` },
      ];
      for (const request of requests) await app.inject(request);
      const text = lines.map((line) => JSON.stringify(line));
      for (const line of text) {
        expect(line).not.toContain(VALID);
        expect(line).not.toContain(GUESSED);
        expect(line.length).toBeLessThan(1_024);
      }
      expect(lines.filter((line) => line.level !== 'debug')).toEqual([]);
      expect(lines.length).toBeLessThanOrEqual(level === 'debug' ? requests.length : 0);
      if (level === 'debug') expect(lines.map((line) => line.fields.url)).toContain(`/v1/health/service/web?token=[redacted]`);
    });
  }

  it('loggableUrl redacts credential parameters however they are written, and cuts long URLs', () => {
    expect(loggableUrl('/v1/agent/services?token=abc&ns=x')).toBe('/v1/agent/services?token=[redacted]&ns=x');
    expect(loggableUrl('/a?TOKEN=abc&%74oken=def&access_token=g')).toBe('/a?TOKEN=[redacted]&%74oken=[redacted]&access_token=[redacted]');
    expect(loggableUrl('/a?tokenish=1&token')).toBe('/a?tokenish=1&token');
    const long = loggableUrl(`/a?x=${'y'.repeat(10_000)}`);
    expect(long.length).toBeLessThan(LOGGED_URL_MAX_LENGTH + 32);
  });
});
