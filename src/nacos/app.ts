import { metricsPortOf } from '../adapters/metrics.js';
import Fastify, { LogController, type FastifyError, type FastifyInstance } from 'fastify';
import type { LimitSubject } from '../adapters/limits.js';
import querystring from 'fast-querystring';
import type { ApplicationSource } from '../app/application.js';
import type { RegistryConfig } from '../config/load.js';
import { RegistryError } from '../errors.js';
import type { ServerTls } from '../http/server.js';
import type { SampledLogger } from '../log/sampled.js';
import { outcomeOfStatus, type AdapterRecorders } from '../metrics/adapter-metrics.js';
import type { NodeComponents, RegistryNode } from '../node.js';
import type { HeldShares } from '../security/held-shares.js';
import { NacosAccess } from './access.js';
import type { NacosInputLimits } from './instance-input.js';
import { NacosPush, type HoldTarget, type PushSocket } from './push.js';
import { NacosReads } from './reads.js';
import { HTTP_OPERATIONS, listAnswer, nacosRoutes, operationOfRoute } from './routes.js';
import { HandedOnAdmissions, LIST_PATH, listShortcut } from './list-shortcut.js';
import { FrontDoor } from '../http/front-door.js';
import { hostCheckOf } from '../http/access/host-check.js';
import { NacosWrites } from './writes.js';
import { hostCheckHook } from '../http/access-guard.js';

/**
 * What the Nacos API reads of its peer, never the whole node: the adapter contract's ports
 * (access, limits, the redacting and sampling logger; src/adapters/contract.ts) and its
 * metrics (src/metrics/adapter-metrics.ts) among them.
 */
export type NacosNode = ApplicationSource &
  Pick<RegistryNode, 'ready' | 'ports' | 'adapterMetrics'> & { readonly config: RegistryConfig; readonly components: Pick<NodeComponents, 'clock'> };

/** The operations the Nacos adapter records (its HTTP routes and its gRPC request types), declared once. */
export const NACOS_OPERATIONS: readonly string[] = [
  ...HTTP_OPERATIONS,
  'grpc ServerCheckRequest',
  'grpc HealthCheckRequest',
  'grpc InstanceRequest',
  'grpc BatchInstanceRequest',
  'grpc ServiceQueryRequest',
  'grpc SubscribeServiceRequest',
  'grpc ServiceListRequest',
  'grpc other',
];

/** The held pools of the Nacos adapter, from the contract's limits port, with their metrics. */
export interface NacosPools {
  pushTargets: HeldShares;
  grpcConnections: HeldShares;
}

export interface NacosAppOptions {
  node: NacosNode;
  /** A logger to use instead of the contract's (`node.ports.logger`); tests. */
  logger?: SampledLogger;
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
  /** The adapter's metrics (the contract's metrics port: metricsPortOf(node.ports).adapter('nacos')). */
  metrics: AdapterRecorders;
  pools: NacosPools;
  logger: SampledLogger;
  /** Takes a slot of `pool` for `subject`, counting a refusal in the pool's metrics. */
  hold(pool: keyof NacosPools, subject: LimitSubject): ReturnType<HoldTarget>;
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
  const https = tls ? { cert: tls.cert, key: tls.key } : undefined;
  // The list, every client's poll, is answered before fastify when it can be (list-shortcut.ts).
  const frontDoor = new FrontDoor();
  const app = Fastify({
    // fastify reads `https` only for the scheme of the addresses it prints: the factory makes the server.
    ...(https ? { https } : {}),
    serverFactory: frontDoor.serverFactory({
      http: { headersTimeout: limits.headersTimeoutMs },
      ...(https ? { https } : {}),
      keepAliveTimeoutMs: limits.keepAliveTimeoutMs,
      requestTimeoutMs: limits.requestTimeoutMs,
    }),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    bodyLimit: limits.bodyMaxBytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Nacos clients send credentials in the query string (`accessToken`, npm nacos's `password`
    // on every call): fastify's request lines would log the URL with them. No fastify logger:
    // what this adapter logs goes through the contract's redacting, sampling logger, and each
    // request's outcome is a metric (the contract's metrics port, adapter 'nacos').
    logController: new LogController({ disableRequestLogging: true }),
  });
  const logger = (options.logger ?? node.ports.logger).child({ component: 'nacos' });
  const metrics = metricsPortOf(node.ports).adapter('nacos', NACOS_OPERATIONS);
  app.removeAllContentTypeParsers();
  // Nacos clients send form fields (or everything in the query string, with any content type).
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => done(null, querystring.parse(body as string)));
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, _body, done) => done(null, undefined));
  app.setErrorHandler((error, request, reply) => {
    const mapped = nacosErrorOf(error);
    if (mapped.code === 'REG_ERR_INTERNAL') logger.error({ err: error, method: request.method, path: request.routeOptions.url ?? 'unknown' }, 'nacos request failed');
    if (mapped.retryAfterSeconds !== undefined) reply.header('Retry-After', String(mapped.retryAfterSeconds));
    return reply.code(mapped.status).send(mapped.toJSON());
  });
  app.addHook('onResponse', (request, reply, done) => {
    const operation = operationOfRoute(request.method, request.routeOptions.url);
    const outcome = outcomeOfStatus(reply.statusCode);
    if (operation !== undefined) metrics.operation(operation).observe(outcome, reply.elapsedTime / 1000);
    // Refusals are worth a line (sampled: a flood of them is a few lines a second), with the
    // path only: the query string carries the credentials (`accessToken`, `password`).
    if (outcome === 'unauthenticated' || outcome === 'forbidden' || outcome === 'limited') {
      logger.info({ method: request.method, path: request.url.split('?')[0]!.slice(0, 256), statusCode: reply.statusCode, address: request.ip }, 'nacos request refused');
    }
    done();
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no Nacos route ${request.method} ${request.url.split('?')[0]} (docs/nacos.md lists what is served)`);
    return reply.code(error.status).send(error.toJSON());
  });
  // A dev peer on loopback answers only requests for its own names (DNS rebinding: a page could
  // otherwise register or deregister with a form post), as the /v1 and Consul ports do.
  const hostCheck = hostCheckHook(node.config);
  if (hostCheck) app.addHook('onRequest', hostCheck);
  const { clock } = node.components;
  // Writes and reads are the contract's ports: the one application layer of the peer.
  const application = node.ports;
  const beatMs = () => cluster.heartbeatIntervalMs;
  const access = new NacosAccess(node.ports.access, settings.namespaces);
  const { limits: limitsPort } = node.ports;
  const pools: NacosPools = {
    pushTargets: limitsPort.pool('nacos udp push targets', settings.pushTargetsMax, 'nacos.pushTargetsMax'),
    grpcConnections: limitsPort.pool('nacos grpc connections', settings.pushTargetsMax, 'nacos.pushTargetsMax'),
  };
  const poolMetrics = { pushTargets: metrics.pool('udp_push_targets', pools.pushTargets), grpcConnections: metrics.pool('grpc_connections', pools.grpcConnections) };
  const hold = (pool: keyof NacosPools, subject: LimitSubject) => {
    const taken = limitsPort.hold(pools[pool], subject);
    if (!taken.held) poolMetrics[pool].refused(taken.cap);
    return taken;
  };
  const reads = new NacosReads(application.reads, beatMs, settings.namespaces);
  const writes = new NacosWrites(application.writes, application.reads, () => nacosLimitsOf(node.config));
  const push = options.socket
    ? new NacosPush(
        { clock, views: node.ports.reads.views, socket: options.socket, logger, hostsOf: (namespace, service) => reads.hostsOf(namespace, service), pushed: (changedAtMs, count) => metrics.pushes.pushed(changedAtMs, count) },
        settings,
      )
    : null;
  app.addHook('onClose', async () => push?.close());
  const holdPushTarget = (subject: LimitSubject): HoldTarget => () => hold('pushTargets', subject);
  const handedOn = new HandedOnAdmissions();
  const routeDeps = { access, reads, services: application.reads, writes, push, holdPushTarget, ready: () => node.ready, heartbeatIntervalMs: beatMs, handedOn };
  nacosRoutes(app, routeDeps);
  const listed = metrics.operation('instance.list');
  frontDoor.add(
    LIST_PATH,
    listShortcut({
      hostCheck: hostCheckOf(node.config),
      access,
      ready: routeDeps.ready,
      handedOn,
      answer: (params, namespace, admission, sourceAddress) => listAnswer(routeDeps, params, namespace, admission.subject, sourceAddress),
      observe: (seconds) => listed.observe('ok', seconds),
    }),
  );
  // Closing: every request goes to fastify, which answers 503.
  app.addHook('preClose', async () => frontDoor.close());
  return { app, access, reads, writes, push, metrics, pools, logger, hold };
}
