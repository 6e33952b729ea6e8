import { andThen } from '../../app/durable-write.js';
import type { RegistryReads } from '../../app/reads.js';
import type { Scope } from '../../config/security.js';
import { serviceSummaries } from '../../http/namespace-slices.js';
import { invalid, RegistryError } from '../../errors.js';
import { DEFAULT_GROUP, instanceKeyString, type InstanceKey } from '../../registry/types.js';
import { parseName } from '../../registry/validate.js';
import type { PresentedCredentials } from '../../adapters/access.js';
import type { NacosAccess } from '../access.js';
import { serviceInfoJson } from '../documents.js';
import { ipParam, portParam, type NacosInstanceFields } from '../instance-input.js';
import { instanceIdOf, namespaceOfNacos, zonesOfClusters } from '../names.js';
import type { NacosReads } from '../reads.js';
import type { NacosWrites } from '../writes.js';

/** What a v2 connection holds: the instances it registered (their leases live with it) and its subscriptions. */
export interface GrpcConnection {
  id: string;
  address: string;
  instances: Map<string, InstanceKey>;
  subscriptions: Map<string, GrpcSubscription>;
}

/** A service a v2 client subscribed to (SubscribeServiceRequest). */
export interface GrpcSubscription {
  key: string;
  namespace: string;
  service: string;
  group: string;
  clusters: string;
  /** The read layer's key of the service (`views.keyOf`). */
  serviceKey: string;
}

/** What the handlers use: the adapter's access, reads and writes, and the connection table's bounds. */
export interface GrpcHandlerDeps {
  access: NacosAccess;
  reads: NacosReads;
  services: Pick<RegistryReads, 'views' | 'leaseView' | 'countsOf'>;
  writes: NacosWrites;
  ready: () => boolean;
  /** The peer's v2 subscriptions by service: a subscription is added and removed through it (subscription-index.ts). */
  subscriptions: { add(connection: GrpcConnection, subscription: GrpcSubscription): void; remove(connection: GrpcConnection, key: string): void };
  /** Most subscriptions and most instances one connection may hold. */
  perConnectionMax: number;
}

/** A request as it came: its message type, JSON body and headers, and the connection it came on. */
export interface GrpcRequest {
  body: Record<string, unknown>;
  headers: Record<string, string>;
  connection: GrpcConnection;
}

/** A response: its message type and JSON body (resultCode and the other common fields added by `respond`). */
export interface GrpcAnswer {
  type: string;
  body: Record<string, unknown>;
}

type Handler = (deps: GrpcHandlerDeps, request: GrpcRequest) => GrpcAnswer | Promise<GrpcAnswer>;

/** The common fields of a Nacos response: success. */
export function ok(type: string, body: Record<string, unknown>, requestId: unknown): GrpcAnswer {
  return { type, body: { ...body, resultCode: 200, errorCode: 0, success: true, message: null, requestId: typeof requestId === 'string' ? requestId : null } };
}

/** Nacos's failure answer (`ErrorResponse`, resultCode 500), with our status as its errorCode and our code in the message. */
export function failure(error: unknown, requestId: unknown): GrpcAnswer {
  const mapped = error instanceof RegistryError ? error : new RegistryError('REG_ERR_INTERNAL', 'internal error');
  return {
    type: 'ErrorResponse',
    body: { resultCode: 500, errorCode: mapped.status, success: false, message: `${mapped.code}: ${mapped.message}`, requestId: typeof requestId === 'string' ? requestId : null },
  };
}

/**
 * The credentials of a v2 request as Nacos 2.x clients send them (NACOS_CARRIERS): the login's
 * `accessToken` in the request's own `headers` (the Rust and Java SDKs), or in the payload's
 * metadata headers; else `authorization: Bearer` there.
 */
export function grpcCredentialsOf(body: Record<string, unknown>, headers: Record<string, string>, address: string): PresentedCredentials {
  const fromBody = body.headers;
  const bodyToken = fromBody && typeof fromBody === 'object' ? (fromBody as Record<string, unknown>).accessToken : undefined;
  const header = headers.accessToken;
  const token = typeof bodyToken === 'string' && bodyToken !== '' ? bodyToken : typeof header === 'string' && header !== '' ? header : undefined;
  const authorization = headers.authorization ?? headers.Authorization;
  return { address, token, authorization: typeof authorization === 'string' && authorization !== '' ? authorization : undefined };
}

/** Authorizes a naming request on its namespace and gates it until the peer is ready. */
function admit(deps: GrpcHandlerDeps, request: GrpcRequest, scope: Scope): string {
  const namespace = namespaceOfNacos(request.body.namespace);
  deps.access.admit(grpcCredentialsOf(request.body, request.headers, request.connection.address), scope, namespace);
  if (!deps.ready()) throw new RegistryError('REG_ERR_NOT_READY', 'this peer is still starting; try another server', 1);
  return namespace;
}

function groupOfBody(body: Record<string, unknown>): string {
  return body.groupName === undefined || body.groupName === null || body.groupName === '' ? DEFAULT_GROUP : parseName('groupName', body.groupName);
}

function serviceOfBody(body: Record<string, unknown>): string {
  return parseName('serviceName', body.serviceName);
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

/** The fields of an instance in a v2 body (`instance` or one of `instances`). */
function fieldsOf(instance: unknown, namespace: string, service: string, group: string): NacosInstanceFields {
  if (instance === null || typeof instance !== 'object' || Array.isArray(instance)) throw invalid('instance', 'must be an object');
  const fields = instance as Record<string, unknown>;
  return {
    namespaceId: namespace === 'default' ? undefined : namespace,
    serviceName: service,
    groupName: group,
    ip: fields.ip,
    port: fields.port,
    clusterName: fields.clusterName ?? undefined,
    weight: fields.weight,
    healthy: fields.healthy,
    enabled: fields.enabled,
    ephemeral: fields.ephemeral,
    metadata: fields.metadata ?? undefined,
  };
}

/** Refuses an instance past the connection's bound, before anything is written. */
function checkRoom(deps: GrpcHandlerDeps, connection: GrpcConnection, key: InstanceKey): void {
  if (!connection.instances.has(instanceKeyString(key)) && connection.instances.size >= deps.perConnectionMax) {
    throw new RegistryError('REG_ERR_QUOTA_EXCEEDED', `this connection already holds ${deps.perConnectionMax} instances (nacos.pushTargetsPerSourceMax)`);
  }
}

/** Remembers an instance the connection registered (once the write is done): its lease lives with the connection. */
function track(connection: GrpcConnection, key: InstanceKey): void {
  connection.instances.set(instanceKeyString(key), key);
}

/** The service info of a v2 answer or push (JSON text), for one service, group and clusters filter. */
export function serviceInfoOf(deps: Pick<GrpcHandlerDeps, 'reads'>, namespace: string, service: string, group: string, clusters: string, healthyOnly: boolean): string {
  const hosts = deps.reads.hostsOf(namespace, service);
  return serviceInfoJson(hosts.json(group, zonesOfClusters(clusters), healthyOnly), { name: service, groupName: group, clusters, lastRefTimeMs: hosts.builtAtMs, checksum: String(hosts.revision) });
}

const instanceRequest: Handler = (deps, request) => {
  const namespace = admit(deps, request, 'write');
  const { body, connection } = request;
  const service = serviceOfBody(body);
  const group = groupOfBody(body);
  const fields = fieldsOf(body.instance, namespace, service, group);
  const type = stringOr(body.type, '').toLowerCase();
  const key = { namespace, service, instanceId: instanceIdOf(ipParam(fields.ip), portParam('instance.port', fields.port)) };
  if (type === 'registerinstance') {
    checkRoom(deps, connection, key);
    return andThen(deps.writes.register(fields), () => {
      track(connection, key);
      return ok('InstanceResponse', { type: body.type }, body.requestId);
    });
  }
  if (type === 'deregisterinstance') {
    connection.instances.delete(instanceKeyString(key));
    const removed = deps.writes.deregister(key);
    const answer = () => ok('InstanceResponse', { type: body.type }, body.requestId);
    return removed === null ? answer() : andThen(removed, answer);
  }
  throw invalid('type', 'must be registerInstance or deregisterInstance');
};

const batchInstanceRequest: Handler = async (deps, request) => {
  const namespace = admit(deps, request, 'write');
  const { body, connection } = request;
  const service = serviceOfBody(body);
  const group = groupOfBody(body);
  if (stringOr(body.type, '').toLowerCase() !== 'batchregisterinstance') throw invalid('type', 'must be batchRegisterInstance');
  if (!Array.isArray(body.instances) || body.instances.length > deps.perConnectionMax) throw invalid('instances', `must be an array of at most ${deps.perConnectionMax} instances`);
  const all = body.instances.map((instance) => fieldsOf(instance, namespace, service, group));
  for (const fields of all) {
    const key = { namespace, service, instanceId: instanceIdOf(ipParam(fields.ip), portParam('instance.port', fields.port)) };
    checkRoom(deps, connection, key);
    await deps.writes.register(fields);
    track(connection, key);
  }
  return ok('BatchInstanceResponse', { type: body.type }, body.requestId);
};

const serviceQueryRequest: Handler = (deps, request) => {
  const namespace = admit(deps, request, 'read');
  const { body } = request;
  const json = serviceInfoOf(deps, namespace, serviceOfBody(body), groupOfBody(body), stringOr(body.cluster, ''), body.healthyOnly === true);
  return ok('QueryServiceResponse', { serviceInfo: JSON.parse(json) as unknown }, body.requestId);
};

const subscribeServiceRequest: Handler = (deps, request) => {
  const namespace = admit(deps, request, 'read');
  const { body, connection } = request;
  const service = serviceOfBody(body);
  const group = groupOfBody(body);
  const clusters = stringOr(body.clusters, '');
  zonesOfClusters(clusters);
  const key = `${namespace}\n${service.toLowerCase()}\n${group}\n${clusters}`;
  if (body.subscribe === false) deps.subscriptions.remove(connection, key);
  else if (!connection.subscriptions.has(key)) {
    if (connection.subscriptions.size >= deps.perConnectionMax) {
      throw new RegistryError('REG_ERR_QUOTA_EXCEEDED', `this connection already holds ${deps.perConnectionMax} subscriptions (nacos.pushTargetsPerSourceMax)`);
    }
    deps.subscriptions.add(connection, { key, namespace, service, group, clusters, serviceKey: deps.services.views.keyOf(namespace, service) });
  }
  const json = serviceInfoOf(deps, namespace, service, group, clusters, false);
  return ok('SubscribeServiceResponse', { serviceInfo: JSON.parse(json) as unknown }, body.requestId);
};

const serviceListRequest: Handler = async (deps, request) => {
  const namespace = admit(deps, request, 'read');
  const { body } = request;
  const pageNo = typeof body.pageNo === 'number' && body.pageNo >= 1 ? Math.floor(body.pageNo) : 1;
  const pageSize = typeof body.pageSize === 'number' && body.pageSize >= 1 ? Math.min(10_000, Math.floor(body.pageSize)) : 10;
  const names = (await serviceSummaries(deps.services, namespace, groupOfBody(body))).map((summary) => summary.service);
  const start = (pageNo - 1) * pageSize;
  return ok('ServiceListResponse', { count: names.length, serviceNames: names.slice(start, start + pageSize) }, body.requestId);
};

/** An open request (server and health checks): only the peer's rate limit applies; throws its 429. */
function open(deps: GrpcHandlerDeps, request: GrpcRequest): undefined {
  deps.access.admit(grpcCredentialsOf(request.body, request.headers, request.connection.address), null);
  return undefined;
}

/** The request types served over `Request/request`, by message type. */
export const grpcHandlers: Readonly<Record<string, Handler>> = {
  ServerCheckRequest: (deps, request) => open(deps, request) ?? ok('ServerCheckResponse', { connectionId: request.connection.id, supportAbilityNegotiation: false }, request.body.requestId),
  HealthCheckRequest: (deps, request) => open(deps, request) ?? ok('HealthCheckResponse', {}, request.body.requestId),
  InstanceRequest: instanceRequest,
  BatchInstanceRequest: batchInstanceRequest,
  ServiceQueryRequest: serviceQueryRequest,
  SubscribeServiceRequest: subscribeServiceRequest,
  ServiceListRequest: serviceListRequest,
};
