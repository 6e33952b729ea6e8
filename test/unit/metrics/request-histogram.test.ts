import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestHistogram } from '../../../src/metrics/request-histogram.js';

const BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const HELP = 'Time to answer an HTTP request.';

/** The same observations through prom-client's Histogram and through ours: the two scrapes. */
async function bothScrapes(observations: readonly [string, string, number, number][]): Promise<[string, string]> {
  const theirs = new Registry();
  const reference = new Histogram({ name: 'latency_seconds', help: HELP, labelNames: ['method', 'route', 'status_code'], buckets: BOUNDS, registers: [theirs] });
  const ours = new Registry();
  const histogram = new RequestHistogram('latency_seconds', HELP, BOUNDS, ours);
  for (const [method, route, status, seconds] of observations) {
    reference.observe({ method, route, status_code: status }, seconds);
    histogram.observe(method, route, status, seconds);
  }
  return [await theirs.metrics(), await ours.metrics()];
}

describe('the HTTP latency histogram', () => {
  it('scrapes exactly as prom-client’s Histogram does, whatever was observed', async () => {
    const observation = fc.tuple(
      fc.constantFrom('GET', 'PUT', 'POST', 'DELETE'),
      fc.constantFrom('/v1/services/:service', '/v1/instances', '/eureka/apps/', 'unmatched', '/v1/services/:service (long poll)', 'a "quoted" \\ route'),
      fc.constantFrom(200, 201, 204, 400, 404, 429, 503),
      // On the bounds, between them and past the last one (the +Inf bucket only).
      fc.oneof(fc.constantFrom(0, ...BOUNDS, 31, 120), fc.double({ min: 0, max: 40, noNaN: true })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 200 }), async (observations) => {
        const [theirs, ours] = await bothScrapes(observations);
        expect(ours).toBe(theirs);
      }),
      { seed: 20261201, numRuns: 150 },
    );
  });

  it('prints one series per method, route and status, and starts again after a reset', async () => {
    const registry = new Registry();
    const histogram = new RequestHistogram('latency_seconds', HELP, [0.001, 0.01], registry);
    histogram.observe('GET', '/v1/instances', 200, 0.0004);
    histogram.observe('GET', '/v1/instances', 200, 0.02);
    histogram.observe('PUT', '/v1/instances', 200, 0.005);
    const text = await registry.metrics();
    expect(text).toContain('latency_seconds_bucket{le="0.001",method="GET",route="/v1/instances",status_code="200"} 1');
    expect(text).toContain('latency_seconds_bucket{le="0.01",method="GET",route="/v1/instances",status_code="200"} 1');
    expect(text).toContain('latency_seconds_bucket{le="+Inf",method="GET",route="/v1/instances",status_code="200"} 2');
    expect(text).toContain('latency_seconds_count{method="PUT",route="/v1/instances",status_code="200"} 1');
    registry.resetMetrics();
    expect(await registry.metrics()).toBe(`# HELP latency_seconds ${HELP}\n# TYPE latency_seconds histogram\n`);
  });
});
