import type { FastifyInstance, onResponseHookHandler } from 'fastify';
import { outcomeOfStatus, type AdapterRecorders, type OperationRecorder, type Outcome } from '../metrics/adapter-metrics.js';

/**
 * The Consul API's requests in the peer's adapter metrics (docs/metrics.md, "Protocols"):
 * operation `METHOD pattern` (`GET /v1/health/service/:name`), declared as each route is
 * added and bound into an `onResponse` hook of that route, so that a request costs a property
 * read and the recorder's array writes (no label object, no route lookup). Answers written to the socket
 * directly (query.ts, `sendConsulAnswer`, a hijacked reply) are counted too: fastify listens
 * for the end of every response from the start of its request, so `onResponse` runs for them.
 */

/** The adapter's name in the metrics (the `adapter` label). */
export const CONSUL_ADAPTER = 'consul';
/** The held pool of blocking queries (the `pool` label). */
export const BLOCKING_POOL_LABEL = 'blocking_queries';

declare module 'fastify' {
  interface FastifyRequest {
    /** The outcome a refusal set when its status does not say it (errors.ts: a 403 for a missing token is `unauthenticated`). */
    consulOutcome: Outcome | null;
  }
}

/** Declares every route's operation as it is added, and gives the route an `onResponse` hook bound to its recorders. */
export function installConsulMetrics(app: FastifyInstance, recorders: AdapterRecorders): void {
  app.decorateRequest('consulOutcome', null);
  app.addHook('onRoute', (route) => {
    const operations: Record<string, OperationRecorder> = {};
    for (const method of [route.method].flat()) {
      // HEAD routes fastify adds for GETs are not counted apart.
      if (method === 'HEAD') continue;
      const operation = `${method} ${route.url}`;
      operations[method] = recorders.declare([operation]).operation(operation);
    }
    // A hook of the route's own: its recorders are in the closure (no route lookup per request).
    const record: onResponseHookHandler = (request, reply, done) => {
      operations[request.method]?.observe(request.consulOutcome ?? outcomeOfStatus(reply.statusCode), reply.elapsedTime / 1000);
      done();
    };
    route.onResponse = route.onResponse === undefined ? [record] : [...[route.onResponse].flat(), record];
  });
}
