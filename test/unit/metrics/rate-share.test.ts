import { afterEach, describe, expect, it } from 'vitest';
import { NodeMetrics } from '../../../src/metrics/node-metrics.js';
import { RateLimiter } from '../../../src/security/rate-limit.js';
import { createTestConsul, type TestConsul } from '../../support/consul.js';
import { FakeClock } from '../../support/fake-clock.js';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.js';

let t: TestConsul | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('RateLimiter.heaviest: the clients using most of their burst now (issue 37.1)', () => {
  it('lists at most n, most first, refilled to now, leaving out full buckets and what `keep` refuses', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter(clock, { ratePerSecond: 1, burst: 10, maxClients: 100 });
    const spend = (client: string, requests: number) => {
      for (let i = 0; i < requests; i++) limiter.take(client);
    };
    spend('token:a', 2);
    spend('token:b', 8);
    spend('address:10.0.0.1', 5);
    spend('peer:10.0.0.9', 10);
    expect(limiter.heaviest(2)).toEqual([
      { client: 'peer:10.0.0.9', used: 1 },
      { client: 'token:b', used: 0.8 },
    ]);
    expect(limiter.heaviest(3, (client) => !client.startsWith('peer:'))).toEqual([
      { client: 'token:b', used: 0.8 },
      { client: 'address:10.0.0.1', used: 0.5 },
      { client: 'token:a', used: 0.2 },
    ]);
    // Three seconds refill three tokens each: token:a's bucket is full again and drops out.
    await clock.advance(3_000);
    expect(limiter.heaviest(10, (client) => !client.startsWith('peer:')).map(({ client, used }) => [client, Number(used.toFixed(6))])).toEqual([
      ['token:b', 0.5],
      ['address:10.0.0.1', 0.2],
    ]);
    expect(limiter.heaviest(0)).toEqual([]);
    expect(new RateLimiter(clock, { ratePerSecond: 0, burst: 10, maxClients: 10 }).heaviest(5)).toEqual([]);
  });

  it('is exported as registry_rate_limit_used_by_principal: the 5 heaviest principals of the peer-wide limit, every protocol together', async () => {
    const tokens = Array.from({ length: 7 }, (_, i) => ({ name: `t${i}`, token: `token-${i}-0123456789abcdef`, namespaces: ['*'], scopes: ['read'] }));
    t = await createTestConsul({ file: { limits: { rateLimitPerSecond: 1, rateLimitBurst: 10 }, security: { tokens } } });
    // Token i spends i + 1 requests of its burst, half on /v1 and half on the Consul API (one bucket).
    for (const [i, { token }] of tokens.entries()) {
      for (let r = 0; r <= i; r++) {
        const response =
          r % 2 === 0
            ? await t.native.inject({ url: '/v1/services', remoteAddress: '10.0.0.1', headers: { authorization: `Bearer ${token}` } })
            : await t.app.inject({ url: '/v1/catalog/services', remoteAddress: '10.0.0.2', headers: { 'x-consul-token': token } });
        expect(response.statusCode).toBe(200);
      }
    }
    const families = parsePrometheusText(await new NodeMetrics(t.node).scrape());
    const family = families.get('registry_rate_limit_used_by_principal')!;
    expect(family.type).toBe('gauge');
    expect(family.samples.map((sample) => sample.labels.principal)).toEqual(['token:t6', 'token:t5', 'token:t4', 'token:t3', 'token:t2']);
    expect(sampleValue(families, 'registry_rate_limit_used_by_principal', { principal: 'token:t6' })).toBeCloseTo(0.7, 6);
    expect(sampleValue(families, 'registry_rate_limit_used_by_principal', { principal: 'token:t1' })).toBeUndefined();
  });
});
