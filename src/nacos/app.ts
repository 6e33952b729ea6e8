import Fastify, { LogController, type FastifyError, type FastifyInstance } from 'fastify';
import querystring from 'fast-querystring';
import { applicationOf, type ApplicationSource } from '../app/application.js';
import type { RegistryConfig } from '../config/load.js';
import { RegistryError } from '../errors.js';
import type { ServerTls } from '../http/server.js';
import type { Logger } from '../log/logger.js';
import type { NodeComponents, RegistryNode } from '../node.js';
import { NacosAccess } from './access.js';
import type { NacosInputLimits } from './instance-input.js';
import { NacosPush, type PushSocket } from './push.js';
import { NacosReads } from './reads.js';
import { nacosRoutes } from './routes.js';
import { NacosWrites } from './writes.js';

/** What the Nacos API reads of its peer, never the whole node. */
export type NacosNode = ApplicationSource &
  Pick<RegistryNode, 'ready'> & { readonly config: RegistryConfig; readonly components: Pick<NodeComponents, 'clock' | 'logger'> };

export interface NacosAppOptions {
  node: NacosNode;
  logger?: Logger;
  tls?: ServerTls;
  /** Where UDP pushes go out (and acks come in); none: no push (lists still work, clients poll). */
  socket?: PushSocket;
}

/** The app and what it holds beside its routes (the gRPC server shares them). */
export interface NacosApp {
  app: FastifyInstance;
  access: NacosAccess;
  reads: NacosReads;
  writes: NacosWrites;
  push: NacosPush | null;
}

/** The cluster's settings a Nacos instance is read with. */
export function nacosLimitsOf(config: RegistryConfig): NacosInputLimits {
  return { input: config.limits, lease: config.cluster, heartbeatIntervalMs: config.cluster.heartbeatIntervalMs };
}

/** The status and `{code, message}` of any error a Nacos route throws. */
export function nacosErrorOf(error: unknown): RegistryError {
  if (error instanceof RegistryError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new RegistryError('REG_ERR_BODY_TOO_LARGE', `the request body is larger than limits.bodyMaxBytes`);
  if (fastifyError.statusCode === 400 || fastifyError.code?.startsWith('FST_ERR_CTP')) return new RegistryError('REG_ERR_VALIDATION', `request: ${fastifyError.message}`);
  return new RegistryError('REG_ERR_INTERNAL', 'internal error');
}

/**
 * The Nacos naming API of one peer (docs/nacos.md), as its own fastify app on a port of its
 * own (Nacos clients build `/nacos/v1/...` paths on port 8848). Built apart from `listen()`
 * so tests drive it with `inject()`.
 */
export async function buildNacosApp(options: NacosAppOptions): Promise<NacosApp> {
  const { node, tls } = options;
  const { limits, cluster } = node.config;
  const settings = node.config.protocols.nacos;
  const app = Fastify({
    ...(tls ? { https: { cert: tls.cert, key: tls.key, headersTimeout: limits.headersTimeoutMs } } : { http: { headersTimeout: limits.headersTimeoutMs } }),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    bodyLimit: limits.bodyMaxBytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Nacos clients send credentials in the query string (`accessToken`, npm nacos's `password`
    // on every call): fastify's request lines would log the URL with them. One line without
    // the query is logged at debug instead (below).
    logController: new LogController({ disableRequestLogging: true }),
    ...(options.logger ? { loggerInstance: options.logger.child({ component: 'nacos' }) as never } : {}),
  });
  app.removeAllContentTypeParsers();
  // Nacos clients send form fields (or everything in the query string, with any content type).
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => done(null, querystring.parse(body as string)));
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, _body, done) => done(null, undefined));
  app.setErrorHandler((error, request, reply) => {
    const mapped = nacosErrorOf(error);
    if (mapped.code === 'REG_ERR_INTERNAL') request.log.error({ err: error }, 'nacos request failed');
    if (mapped.retryAfterSeconds !== undefined) reply.header('Retry-After', String(mapped.retryAfterSeconds));
    return reply.code(mapped.status).send(mapped.toJSON());
  });
  app.addHook('onResponse', (request, reply, done) => {
    // Built only when debug is on: lists of a big service are a hot path.
    if (request.log.level === 'debug' || request.log.level === 'trace') request.log.debug({ method: request.method, path: request.url.split('?')[0], statusCode: reply.statusCode, responseTimeMs: Math.round(reply.elapsedTime) }, 'nacos request');
    done();
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no Nacos route ${request.method} ${request.url.split('?')[0]} (docs/nacos.md lists what is served)`);
    return reply.code(error.status).send(error.toJSON());
  });
  const { clock } = node.components;
  const application = applicationOf(node);
  const beatMs = () => cluster.heartbeatIntervalMs;
  const access = new NacosAccess(node.config, clock, settings.namespaces);
  const reads = new NacosReads(application.reads, beatMs, settings.namespaces);
  const writes = new NacosWrites(application.writes, application.reads, () => nacosLimitsOf(node.config));
  const logger = (options.logger ?? node.components.logger).child({ component: 'nacos' });
  const push = options.socket
    ? new NacosPush({ clock, views: node.views, socket: options.socket, logger, hostsOf: (namespace, service) => reads.hostsOf(namespace, service) }, settings)
    : null;
  app.addHook('onClose', async () => push?.close());
  nacosRoutes(app, { access, reads, services: application.reads, writes, push, ready: () => node.ready, heartbeatIntervalMs: beatMs });
  return { app, access, reads, writes, push };
}
