import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { RegistryNode } from '../node.js';
import { adminRoutes } from './admin-routes.js';
import { clientRoutes } from './client-routes.js';
import { EUREKA_PREFIXES, eurekaApi } from './eureka/routes.js';
import { installErrorHandlers } from './errors.js';
import { NodeMetrics } from '../metrics/node-metrics.js';
import { instrumentHttp, metricsRoutes } from './metrics-routes.js';
import { docsRoutes, installOpenApi } from './docs-routes.js';
import { uiRoutes } from './ui-routes.js';
import { opsRoutes } from './ops-routes.js';
import { peerRoutes } from './peer-routes.js';
import { watchRoutes } from './watch-routes.js';

export interface ServerOptions {
  node: RegistryNode;
  /** A pino logger for request logs; none keeps the server silent (tests). */
  logger?: FastifyBaseLogger;
  /** Called for every route as it is added (tests use it to check docs and guards cover all). */
  onRoute?: (method: string, url: string) => void;
  /** Export the process figures (CPU, memory, GC, event loop) in `/metrics`; on in a real peer, off in tests. */
  processMetrics?: boolean;
}

/**
 * Builds the HTTP app of one peer without listening, so tests can drive it with `inject()`.
 * Each route group is its own plugin (ops, client, peer, admin, watch, Eureka under both of its
 * prefixes, metrics, docs, dashboard), so guards can be attached per group. The OpenAPI
 * collector and the HTTP latency hook sit on the root, before any route, to see them all.
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { node } = options;
  const app = Fastify({
    loggerInstance: options.logger?.child({ component: 'http' }),
    // Fastify's per-request info lines are replaced by one debug line (onResponse below).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: node.config.limits.bodyMaxBytes,
    // Room for the longest path parameters we accept (instance ids: 256, Eureka VIP addresses:
    // 1,024 characters), so that they get a 400 naming the field rather than fastify's 414.
    routerOptions: { maxParamLength: 2_048 },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });
  const { onRoute } = options;
  if (onRoute) {
    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) if (method !== 'HEAD') onRoute(method, route.url);
    });
  }
  installErrorHandlers(app);
  // JSON only: a text body would otherwise reach the routes as a string.
  app.removeContentTypeParser('text/plain');
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug(
      { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });
  await installOpenApi(app, EUREKA_PREFIXES);
  const metrics = new NodeMetrics(node, { processMetrics: options.processMetrics ?? false });
  app.addHook('onClose', async () => metrics.stop());
  instrumentHttp(app, metrics);
  await app.register(opsRoutes, { node });
  await app.register(clientRoutes, { node });
  await app.register(peerRoutes, { node });
  await app.register(adminRoutes, { node });
  await app.register(watchRoutes, { node });
  // Watch streams and long polls would hold a shutdown for minutes: end them first.
  app.addHook('preClose', async () => node.watch.closeAll());
  await app.register(eurekaApi, { node, prefixes: EUREKA_PREFIXES });
  await app.register(metricsRoutes, { metrics });
  await app.register(docsRoutes);
  await app.register(uiRoutes);
  return app;
}
