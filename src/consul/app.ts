import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { ApplicationSource } from '../app/application.js';
import { hostCheckHook } from '../http/access-guard.js';
import type { ServerTls } from '../http/server.js';
import { lazyRequestLogger } from '../http/request-logger.js';
import type { Logger } from '../log/logger.js';
import type { RegistryConfig } from '../config/load.js';
import type { NodeComponents, RegistryNode } from '../node.js';
import { ConsulAccess } from './access.js';
import { agentRoutes } from './agent-routes.js';
import { BlockingQueries } from './blocking.js';
import { ConsulDirectory } from './directory.js';
import { badRequest, installConsulErrors } from './errors.js';
import { installConsulGuard } from './guard.js';
import { consulOpenApiRoute, installConsulOpenApi } from './openapi.js';
import { readRoutes } from './read-routes.js';
import { installConsulRequestLog } from './request-log.js';
import { BLOCKING_POOL_LABEL, CONSUL_ADAPTER, installConsulMetrics } from './metrics.js';
import { metricsPortOf } from '../adapters/metrics.js';
import type { ConsulPeer } from './query.js';
import { statusRoutes } from './status-routes.js';
import { ConsulWrites } from './writes.js';

/**
 * What the Consul API reads of its peer, never the whole node: the settings, the clock, chance
 * and logger, its identity and members (datacenters, `status/peers`), whether the start-up
 * sync is done (readiness gating), and what its application layer is built from.
 */
export type ConsulNode = ApplicationSource &
  ConsulPeer &
  Pick<RegistryNode, 'ready' | 'ports'> & { readonly config: RegistryConfig; readonly components: Pick<NodeComponents, 'clock' | 'rng' | 'logger'> };

export interface ConsulAppOptions {
  node: ConsulNode;
  /** The port it will listen on (what `status/leader` answers); the configured one by default. */
  port?: number;
  logger?: Logger;
  tls?: ServerTls;
}

/** The app and what it holds beside its routes (the TTL sweep and the blocking queries). */
export interface ConsulApp {
  app: FastifyInstance;
  writes: ConsulWrites;
  blocking: BlockingQueries;
}

/**
 * Consul clients send JSON bodies with `application/json`, with no content type at all
 * (python-consul), or none with a content type (the npm client's PUTs to the check routes):
 * every body is read as JSON, and an empty one as none.
 */
function parseJsonBody(_request: unknown, body: string, done: (error: Error | null, value?: unknown) => void): void {
  if (body.trim().length === 0) return done(null, undefined);
  try {
    done(null, JSON.parse(body));
  } catch (error) {
    done(badRequest(`Request decode failed: ${(error as Error).message}`));
  }
}

/**
 * The Consul-compatible API of one peer (docs/consul.md), as its own fastify app so that it
 * can listen on a port of its own: Consul's clients build `/v1/...` paths themselves, which
 * collide with the native API's. Built apart from `listen()` so tests drive it with `inject()`.
 */
export async function buildConsulApp(options: ConsulAppOptions): Promise<ConsulApp> {
  const { node, tls } = options;
  const { limits } = node.config;
  const settings = node.config.protocols.consul;
  const app = Fastify({
    ...(tls ? { https: { cert: tls.cert, key: tls.key, headersTimeout: limits.headersTimeoutMs } } : { http: { headersTimeout: limits.headersTimeoutMs } }),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    bodyLimit: limits.bodyMaxBytes,
    routerOptions: { maxParamLength: 2_048 },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // No fastify request lines (they carry the URL, `?token=` included): one redacted debug
    // line per request instead (request-log.ts), each request's logger made on its first line.
    logController: new LogController({ disableRequestLogging: true }),
    ...(options.logger ? { loggerInstance: options.logger.child({ component: 'consul' }) as never, childLoggerFactory: lazyRequestLogger } : {}),
  });
  const level = (options.logger as { level?: unknown } | undefined)?.level;
  const debugLogging = level === 'debug' || level === 'trace';
  installConsulRequestLog(app, debugLogging);
  installConsulErrors(app);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, parseJsonBody);
  // The metrics port: requests per route and outcome, the blocking-query pool, wakes as pushes (metrics.ts).
  const recorders = metricsPortOf(node.ports).adapter(CONSUL_ADAPTER);
  installConsulMetrics(app, recorders);
  const access = new ConsulAccess(node.config, node.ports.access);
  const blocking = new BlockingQueries(
    {
      views: node.ports.reads.views,
      clock: node.components.clock,
      rng: node.components.rng,
      limits: node.ports.limits,
      metrics: { pool: (shares) => recorders.pool(BLOCKING_POOL_LABEL, shares), pushes: recorders.pushes },
    },
    { maxWaiters: settings.blockingQueriesMax },
  );
  // The adapter contract's ports (src/adapters/contract.ts): writes durable by type, reads from the read layer.
  const application = node.ports;
  const writes = new ConsulWrites(node, application.writes, application.reads, node.ports.logger);
  const directory = new ConsulDirectory(application.reads.store);
  app.addHook('onClose', async () => directory.close());
  // Blocking queries would hold a shutdown for minutes: end them first.
  app.addHook('preClose', async () => blocking.close());
  // Access, readiness gating and docs come from each route's definition (route-definitions.ts).
  // A dev peer on loopback answers only requests for its own names (DNS rebinding), as /v1 does.
  const hostCheck = hostCheckHook(node.config);
  if (hostCheck) app.addHook('onRequest', hostCheck);
  installConsulGuard(app, access, node, settings.allowGetWrites);
  await installConsulOpenApi(app);
  await app.register(agentRoutes, { config: node.config, reads: application.reads, writes, directory });
  // With debug logging every request gets its line (request-log.ts): then no answer skips fastify's hooks.
  await app.register(readRoutes, { peer: node, reads: application.reads, blocking, settings, directAnswers: !debugLogging });
  await app.register(statusRoutes, { peer: node, port: options.port ?? settings.port ?? 8500 });
  consulOpenApiRoute(app);
  return { app, writes, blocking };
}
