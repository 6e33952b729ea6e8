import { afterEach, describe, expect, it } from 'vitest';
import { createTestServer, type TestServer } from '../../../support/server.js';
import { parsePrometheusText, sampleValue } from '../../../support/prom-text.js';
import { bearer, securedFile, TOKENS } from '../../../support/security.js';

let server: TestServer | undefined;
afterEach(async () => {
  server?.node.watch.closeAll();
  await server?.app.close();
  server = undefined;
});

/** 4 watch streams and 4 long polls on the peer, a share of 2 each per principal. */
const file = securedFile({ cluster: { watchMaxWatchers: 4 }, limits: { heldSharePerPrincipalRatio: 0.5 } });

describe('per-principal shares of the held slots (issue 33, finding 5)', () => {
  it('one token holding its share of long polls leaves room for another, and is told so with a 429 naming the share', async () => {
    server = await createTestServer({ file });
    const app = server.app;
    const poll = (token: string, address = '10.0.0.1', index = 0) =>
      app.inject({ url: `/v1/services/orders?namespace=team-a&index=${index}&wait=5m`, headers: bearer(token), remoteAddress: address });
    const settled: string[] = [];
    const held = [poll(TOKENS.reader), poll(TOKENS.reader, '10.0.0.2')].map((pending, i) => pending.then((r) => (settled.push(`reader ${i}`), r)));
    await server.clock.advance(1_000);
    expect(settled).toEqual([]);
    // Its third, from whatever address: refused, naming the share and the setting.
    const refused = await poll(TOKENS.reader, '10.0.0.3');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.json()).toEqual({
      code: 'REG_ERR_TOO_MANY_WATCHERS',
      message: expect.stringMatching(/^token reader already holds 2 long polls, its share of this peer's 4 \(limits\.heldSharePerPrincipalRatio\)/),
    });
    // Another token still gets its own share.
    const other = poll(TOKENS.root).then((r) => (settled.push('root'), r));
    await server.clock.advance(1_000);
    expect(settled).toEqual([]);
    // A change answers them all and frees the slots: the reader may poll again.
    await app.inject({ method: 'POST', url: '/v1/instances?namespace=team-a', headers: bearer(TOKENS.writer), payload: { service: 'orders', host: '10.0.0.5', port: 80 } });
    await server.clock.advance(0);
    expect((await Promise.all([...held, other])).map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(server.node.ports.limits.heldPools.get('long polls')!.held).toBe(0);
    const again = poll(TOKENS.reader, '10.0.0.1', 1_000);
    await server.clock.advance(0);
    expect(server.node.ports.limits.heldPools.get('long polls')!.heldBy('token:reader')).toBe(1);
    server.node.watch.closeAll();
    expect((await again).statusCode).toBe(200);
  });

  it('shares the watch streams the same way, and frees a stream\'s slot when it ends', async () => {
    server = await createTestServer({ file });
    const app = server.app;
    const stream = (token: string) => app.inject({ url: '/v1/watch?namespace=team-a&services=orders', headers: bearer(token) });
    const open = [stream(TOKENS.reader), stream(TOKENS.reader)];
    await server.clock.advance(10);
    const streams = server.node.ports.limits.heldPools.get('watch streams')!;
    expect(streams.heldBy('token:reader')).toBe(2);
    const refused = await stream(TOKENS.reader);
    expect(refused.statusCode).toBe(429);
    expect(refused.json().message).toMatch(/^token reader already holds 2 watch streams, its share of this peer's 4 \(limits\.heldSharePerPrincipalRatio\); close some, or give each client its own token/);
    const other = stream(TOKENS.root);
    await server.clock.advance(10);
    expect(streams.heldBy('token:root')).toBe(1);
    server.node.watch.closeAll();
    expect((await Promise.all([...open, other])).map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(streams.held).toBe(0);
  });

  it('exports the native pools in /metrics: held now, refusals by cap, the heaviest principal (issue 37)', async () => {
    server = await createTestServer({ file });
    const app = server.app;
    const stream = (token: string) => app.inject({ url: '/v1/watch?namespace=team-a&services=orders', headers: bearer(token) });
    const open = [stream(TOKENS.reader), stream(TOKENS.reader)];
    await server.clock.advance(10);
    expect((await stream(TOKENS.reader)).statusCode).toBe(429);
    const scrape = async () => parsePrometheusText((await app.inject({ url: '/metrics', headers: bearer(TOKENS.root) })).body);
    const families = await scrape();
    const pool = { adapter: 'native', pool: 'watch_streams' };
    expect(sampleValue(families, 'registry_adapter_held', pool)).toBe(2);
    expect(sampleValue(families, 'registry_adapter_held_refused_total', { ...pool, cap: 'principal' })).toBe(1);
    expect(sampleValue(families, 'registry_adapter_held_refused_total', { ...pool, cap: 'peer' })).toBe(0);
    expect(sampleValue(families, 'registry_adapter_held_by_principal', { ...pool, principal: 'token:reader' })).toBe(2);
    expect(sampleValue(families, 'registry_adapter_held', { adapter: 'native', pool: 'long_polls' })).toBe(0);
    server.node.watch.closeAll();
    await Promise.all(open);
    expect(sampleValue(await scrape(), 'registry_adapter_held', pool)).toBe(0);
  });

  it('counts clients without a token by their address (dev mode)', async () => {
    server = await createTestServer({ file: { cluster: { watchMaxWatchers: 4 }, limits: { heldSharePerPrincipalRatio: 0.25 } } });
    const app = server.app;
    const poll = (address: string) => app.inject({ url: '/v1/services/orders?index=0&wait=5m', remoteAddress: address });
    const first = poll('10.0.0.1');
    await server.clock.advance(10);
    const refused = await poll('10.0.0.1');
    expect(refused.json().message).toMatch(/^address 10\.0\.0\.1 already holds 1 long polls/);
    const second = poll('10.0.0.2');
    await server.clock.advance(10);
    expect(server.node.ports.limits.heldPools.get('long polls')!.held).toBe(2);
    server.node.watch.closeAll();
    await Promise.all([first, second]);
  });
});
