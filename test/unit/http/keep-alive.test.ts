import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { buildServer } from '../../../src/http/server.js';
import { createTestNode } from '../../support/node.js';
import type { FastifyInstance } from 'fastify';

/**
 * The peer keeps an idle connection longer than its clients do (docs/deployment.md,
 * "Keep-alive"): it says how long in every answer (`Keep-Alive: timeout=S`), and undici (the
 * TypeScript client, the command line, the tests) reuses a connection for that hint less its
 * 2 s threshold. Without the hint undici would keep it 4 s, closer to the peer's 5 s.
 */
const UNDICI_KEEP_ALIVE_THRESHOLD_MS = 2_000;

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('keep-alive: the peer waits longer than its clients', () => {
  it.each([5_000, 30_000])('with limits.keepAliveTimeoutMs %i, answers carry a hint clients turn into a shorter idle time', async (keepAliveTimeoutMs) => {
    const { node } = await createTestNode({ file: { limits: { keepAliveTimeoutMs } } });
    app = await buildServer({ node });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const response = await request(`${address}/healthz`);
    await response.body.dump();
    const hint = /timeout=(\d+)/.exec(String(response.headers['keep-alive']));
    expect(hint).not.toBeNull();
    const clientIdleMs = Number(hint![1]) * 1_000 - UNDICI_KEEP_ALIVE_THRESHOLD_MS;
    expect(clientIdleMs).toBeGreaterThan(0);
    expect(clientIdleMs).toBeLessThanOrEqual(keepAliveTimeoutMs - UNDICI_KEEP_ALIVE_THRESHOLD_MS);
    await node.stop();
  });
});
