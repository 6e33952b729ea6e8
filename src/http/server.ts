import { metricsPortOf } from '../adapters/metrics.js';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { RegistryNode } from '../node.js';
import { installAccessGuard } from './access-guard.js';
import { watchSharesOf } from './access/watch-shares.js';
import { adminRoutes } from './admin-routes.js';
import { clientRoutes } from '../native/routes.js';
import { EUREKA_PREFIXES, eurekaApi } from '../eureka/routes.js';
import { installBodyParsers } from './body-parsers.js';
import { installErrorHandlers } from './errors.js';
import { FrontDoor, type ShortcutContext } from './front-door.js';
import type { StallWatch } from '../clock/stall-watch.js';
import { installReadinessGate } from './readiness-gate.js';
import { lazyRequestLogger } from './request-logger.js';
import { NodeMetrics } from '../metrics/node-metrics.js';
import { instrumentHttp, metricsRoutes } from './metrics-routes.js';
import { docsRoutes, installOpenApi } from './docs-routes.js';
import { uiRoutes } from './ui-routes.js';
import { opsRoutes } from './ops-routes.js';
import { peerRoutes } from './peer-routes.js';
import { prometheusSdRoutes } from '../prometheus/routes.js';
import { watchRoutes } from '../native/watch-routes.js';

export interface ServerOptions {
  node: RegistryNode;
  /** A pino logger for request logs; none keeps the server silent (tests). */
  logger?: FastifyBaseLogger;
  /** Called for every route as it is added (tests use it to check docs and guards cover all). */
  onRoute?: (method: string, url: string) => void;
  /** Serve HTTPS with this certificate (PEM); absent: plain HTTP. */
  tls?: ServerTls;
  /** Export the process figures (CPU, memory, GC, event loop) in `/metrics`; on in a real peer, off in tests. */
  processMetrics?: boolean;
  /**
   * The peer's stall watch (clock/stall-watch.ts), started once the server listens: it counts
   * the connections accepted, and peer calls abandoned during a stall are skipped
   * (abandoned-calls.ts). None in tests that do not stop a process.
   */
  stallWatch?: StallWatch;
}

/** The server's certificate and, for peer mTLS, the CA client certificates are verified against. */
export interface ServerTls {
  cert: Buffer;
  key: Buffer;
  /** Asks every client for a certificate, verified against `ca`; one is never required (token clients have none). */
  clientCa?: Buffer;
}

/** How often Node checks requests against the headers and request timeouts (its default is 30 s). */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/**
 * Builds the HTTP app of one peer without listening, so tests can drive it with `inject()`.
 * Each route group is its own plugin (ops, client, peer, admin, watch, Eureka under both of its
 * prefixes, metrics, docs, dashboard), so guards can be attached per group. The OpenAPI
 * collector and the HTTP latency hook sit on the root, before any route, to see them all.
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { node } = options;
  const { limits } = node.config;
  // Slow clients cannot hold sockets: headers and whole requests have deadlines, idle
  // keep-alive sockets close. Answers are not bounded (long polls and watch streams last).
  const timeouts = { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS };
  const tls = options.tls;
  const https = tls
    ? { cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: false } : {}) }
    : undefined;
  // The hottest read is answered before fastify when it can be (front-door.ts).
  const frontDoor = new FrontDoor();
  const app = Fastify({
    // fastify reads `https` only for the scheme of the addresses it prints: the factory makes the server.
    ...(https ? { https } : {}),
    serverFactory: frontDoor.serverFactory({
      http: timeouts,
      ...(https ? { https } : {}),
      keepAliveTimeoutMs: limits.keepAliveTimeoutMs,
      requestTimeoutMs: limits.requestTimeoutMs,
    }),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    loggerInstance: options.logger?.child({ component: 'http' }),
    // Fastify's per-request info lines are replaced by one debug line (onResponse below).
    logController: new LogController({ disableRequestLogging: true }),
    // Each request's child logger is made on its first line (request-logger.ts). Only with a
    // logger: without one fastify skips request children altogether.
    ...(options.logger ? { childLoggerFactory: lazyRequestLogger } : {}),
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
  installErrorHandlers(app, limits);
  // Before any route: every route added below is guarded by the access policy.
  const guard = installAccessGuard(app, node.config, { ...node.components, rates: node.ports.limits.rates });
  installReadinessGate(app, node);
  // JSON bodies; an empty body is no body whatever its content type (body-parsers.ts).
  installBodyParsers(app);
  // The log level is fixed for the life of the process: without debug, no hook runs at all.
  const debugLogging = options.logger?.level === 'debug' || options.logger?.level === 'trace';
  if (debugLogging) app.addHook('onResponse', (request, reply, done) => {
    request.log.debug(
      { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
    done();
  });
  await installOpenApi(app, EUREKA_PREFIXES);
  const { stallWatch } = options;
  if (stallWatch) {
    // A peer that stood still skips the peer calls abandoned meanwhile (abandoned-calls.ts).
    frontDoor.skipAbandonedPeerCalls(stallWatch);
    app.server.on('connection', () => stallWatch.noteConnection());
    app.addHook('onListen', async () => stallWatch.start());
    app.addHook('onClose', async () => stallWatch.stop());
  }
  const metrics = new NodeMetrics(node, { processMetrics: options.processMetrics ?? false, ...(stallWatch ? { stallWatch } : {}) });
  app.addHook('onClose', async () => metrics.stop());
  instrumentHttp(app, metrics);
  // The protocols' routes get the application layer (the contract's ports: reads, and writes
  // behind the durability barrier, one per peer) and the few settings and collaborators each
  // needs, never the whole node.
  const application = node.ports;
  const { clock } = node.components;
  // With debug logging every request is logged by the hook above: then no shortcut is taken.
  const shortcuts: ShortcutContext | undefined = debugLogging
    ? undefined
    : { frontDoor, guard, ready: () => node.ready, observe: (...observation) => metrics.observeHttp(...observation) };
  app.addHook('preClose', async () => frontDoor.close());
  await app.register(opsRoutes, { node });
  // Watch streams and long polls are held per principal from the peer's pools (the adapter contract's limits).
  const shares = watchSharesOf(node.ports.limits, node.config.cluster.watchMaxWatchers, metricsPortOf(node.ports).adapter('native'));
  await app.register(clientRoutes, { application, config: node.config, shares, ...(shortcuts ? { shortcuts } : {}) });
  await app.register(peerRoutes, { node });
  await app.register(adminRoutes, { node });
  await app.register(watchRoutes, { reads: application.reads, clock, config: node.config, shares });
  await app.register(prometheusSdRoutes, { reads: application.reads });
  // Watch streams and long polls would hold a shutdown for minutes: end them first.
  app.addHook('preClose', async () => node.watch.closeAll());
  await app.register(eurekaApi, { application, clock, config: node.config, prefixes: EUREKA_PREFIXES });
  await app.register(metricsRoutes, { metrics });
  await app.register(docsRoutes);
  await app.register(uiRoutes, { node });
  return app as unknown as FastifyInstance;
}
