import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { shortcutStartedAtMs } from './front-door.js';
import { LONG_POLL_SUFFIX } from '../metrics/http-attribution.js';
import type { NodeMetrics } from '../metrics/node-metrics.js';
import { text } from './openapi/schemas.js';
import { serve, type RouteGroup } from './route-definition.js';

export const METRICS_ROUTES = {
  // Prometheus figures span every namespace (service names, counts, peers): operators only;
  // scrapers send the token as a bearer token.
  metrics: {
    method: 'GET',
    url: '/metrics',
    access: 'admin',
    gatedUntilReady: false,
    doc: { summary: 'Prometheus metrics (docs/metrics.md)', tags: ['operations'], response: { 200: text('Prometheus text format 0.0.4') } },
  },
} satisfies RouteGroup;

/** Routes whose requests are long-lived by design and so stay out of the latency histogram. */
const STREAMS = new Set(['/v1/watch']);
/** The long-poll form of this route (with `?index=`) waits on purpose: it gets its own label. */
const LONG_POLL_ROUTE = '/v1/services/:service';
const LONG_POLL_LABEL = `${LONG_POLL_ROUTE}${LONG_POLL_SUFFIX}`;

/**
 * Times every answered request into the HTTP latency histogram, labelled by the route's
 * pattern (`/v1/services/:service`, never the raw URL, so the label set stays small). Installed
 * on the root app so it sees every route group.
 */
export function instrumentHttp(app: FastifyInstance, metrics: NodeMetrics): void {
  // Each protocol's routes become its adapter's operations as they are added (bounded: the routes).
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) metrics.declareHttpRoute(method, route.url, { longPoll: route.url === LONG_POLL_ROUTE });
  });
  app.addHook('onResponse', (request, reply, done) => {
    let route = request.routeOptions.url ?? 'unmatched';
    if (STREAMS.has(route)) return done();
    if (route === LONG_POLL_ROUTE && (request.query as Record<string, unknown> | undefined)?.index !== undefined) {
      route = LONG_POLL_LABEL;
    }
    // A request a shortcut took and handed back is timed from when the shortcut took it.
    const startedAtMs = shortcutStartedAtMs(request.raw);
    const elapsedMs = startedAtMs === undefined ? reply.elapsedTime : performance.now() - startedAtMs;
    metrics.observeHttp(request.method, route, reply.statusCode, elapsedMs / 1000);
    done();
  });
}

/**
 * `GET /metrics`: Prometheus text format (docs/metrics.md). Its own plugin scope, so that the
 * security layer can guard it apart from the client API.
 */
export async function metricsRoutes(app: FastifyInstance, options: { metrics: NodeMetrics }): Promise<void> {
  const { metrics } = options;
  serve(app, METRICS_ROUTES.metrics, async (_request, reply) => {
    const text = await metrics.scrape();
    return reply.header('content-type', metrics.contentType).send(text);
  });
}
