import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { measureWatchLatency } from '../../bench/sse.js';

// The SSE benchmark (bench/sse.ts) is written against the watch contract before the endpoint
// exists on every build. These tests run it against a tiny server that speaks the contract
// (snapshot per service, then deltas naming added instances) to show the measurement itself
// works, and against one without the route to show it reports "not measured" instead of a figure.

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function contractServer(withWatch: boolean): Promise<string> {
  app = Fastify();
  const streams = new Set<{ write(text: string): void }>();
  let revision = 0;
  if (withWatch) {
    app.get('/v1/watch', (request, reply) => {
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const service = String((request.query as { services: string }).services);
      raw.write(`event: snapshot\ndata: ${JSON.stringify({ namespace: 'default', service, revision, instances: [] })}\n\n`);
      const stream = { write: (text: string) => raw.write(text) };
      streams.add(stream);
      request.raw.on('close', () => streams.delete(stream));
    });
  }
  app.post('/v1/instances', async (request, reply) => {
    const body = request.body as { service: string; instanceId: string };
    revision += 1;
    const delta = { namespace: 'default', service: body.service, revision, added: [{ instanceId: body.instanceId }], removed: [], changed: [] };
    for (const stream of streams) stream.write(`event: delta\ndata: ${JSON.stringify(delta)}\n\n`);
    return reply.code(201).send({ instanceId: body.instanceId });
  });
  return app.listen({ host: '127.0.0.1', port: 0 });
}

describe('the watch-latency benchmark', () => {
  it('measures every subscriber against a server speaking the watch contract', async () => {
    const url = await contractServer(true);
    const report: string[] = [];
    const result = await measureWatchLatency(url, { subscribers: 20, writes: 3, report: (line) => report.push(line) });
    expect(result.measured).toBe(true);
    expect(result.delivered).toBe(60);
    expect(result.expected).toBe(60);
    expect(result.notifyP99Ms).toBeGreaterThan(0);
    expect(result.allNotifiedP50Ms).toBeGreaterThanOrEqual(result.notifyP50Ms!);
    // Progress goes where the caller says, not to the test run's output.
    expect(report).toEqual(['sse: 20 subscribers to sse-bench, 3 registers 300 ms apart', `sse: ${JSON.stringify(result)}`]);
  });

  it('reports "not measured" with the reason when there is no watch endpoint', async () => {
    const url = await contractServer(false);
    const report: string[] = [];
    const result = await measureWatchLatency(url, { subscribers: 5, writes: 1, report: (line) => report.push(line) });
    expect(result).toEqual({ measured: false, reason: expect.stringContaining('no watch endpoint: GET /v1/watch answered 404') });
    // Said once, to the caller: `npm test` no longer prints "sse: not measured ... 404" while passing.
    expect(report).toEqual([`sse: not measured (${result.reason})`]);
  });
});
