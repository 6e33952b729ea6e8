import Fastify, { type FastifyInstance } from 'fastify';
import { applicationOf, type ApplicationSource } from '../app/application.js';
import { hostCheckHook } from '../http/access-guard.js';
import type { ServerTls } from '../http/server.js';
import type { Logger } from '../log/logger.js';
import type { RegistryConfig } from '../config/load.js';
import type { NodeComponents, RegistryNode } from '../node.js';
import { ConsulAccess } from './access.js';
import { agentRoutes } from './agent-routes.js';
import { BlockingQueries } from './blocking.js';
import { badRequest, installConsulErrors } from './errors.js';
import { installConsulGuard } from './guard.js';
import { consulOpenApiRoute, installConsulOpenApi } from './openapi.js';
import { readRoutes } from './read-routes.js';
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
    ...(options.logger ? { loggerInstance: options.logger.child({ component: 'consul' }) as never } : {}),
  });
  installConsulErrors(app);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, parseJsonBody);
  const access = new ConsulAccess(node.config, node.ports.limits.rates);
  const blocking = new BlockingQueries({ views: node.views, clock: node.components.clock, rng: node.components.rng }, { maxWaiters: settings.blockingQueriesMax });
  const application = applicationOf(node);
  const writes = new ConsulWrites(node, application.writes, application.reads);
  // Blocking queries would hold a shutdown for minutes: end them first.
  app.addHook('preClose', async () => blocking.close());
  // Access, readiness gating and docs come from each route's definition (route-definitions.ts).
  // A dev peer on loopback answers only requests for its own names (DNS rebinding), as /v1 does.
  const hostCheck = hostCheckHook(node.config);
  if (hostCheck) app.addHook('onRequest', hostCheck);
  installConsulGuard(app, access, node);
  await installConsulOpenApi(app);
  await app.register(agentRoutes, { config: node.config, reads: application.reads, writes });
  await app.register(readRoutes, { peer: node, reads: application.reads, blocking, settings });
  await app.register(statusRoutes, { peer: node, port: options.port ?? settings.port ?? 8500 });
  consulOpenApiRoute(app);
  return { app, writes, blocking };
}
