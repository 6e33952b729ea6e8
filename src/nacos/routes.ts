import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { whenDurable } from '../app/durable-write.js';
import type { RegistryReads } from '../app/reads.js';
import type { Scope } from '../config/security.js';
import { serviceSummaries } from '../http/namespace-slices.js';
import { invalid, RegistryError } from '../errors.js';
import { DEFAULT_GROUP } from '../registry/types.js';
import { parseName } from '../registry/validate.js';
import { httpCredentials, type PresentedCredentials } from '../adapters/access.js';
import type { LimitSubject } from '../adapters/limits.js';
import { NACOS_CARRIERS, TOKEN_TTL_SECONDS, type NacosAccess } from './access.js';
import { nacosHostOf } from './documents.js';
import { booleanParam, ipParam, portParam, type NacosInstanceFields, type NacosParams } from './instance-input.js';
import { groupedName, instanceIdOf, namespaceOfNacos, parseServiceName, zonesOfClusters } from './names.js';
import { unmappedAddress, type HoldTarget, type NacosPush } from './push.js';
import { firstValues, LIST_PATH, type HandedOnAdmissions } from './list-shortcut.js';
import type { NacosReads } from './reads.js';
import type { NacosWrites } from './writes.js';

/** What the v1 routes are given: access, reads, writes, the push table and readiness. */
export interface NacosRouteDeps {
  access: NacosAccess;
  reads: NacosReads;
  services: Pick<RegistryReads, 'find' | 'views' | 'leaseView' | 'countsOf'>;
  writes: NacosWrites;
  push: NacosPush | null;
  /** How a list with `udpPort` takes its push target's slot (the requester's share of the pool). */
  holdPushTarget: (subject: LimitSubject) => HoldTarget;
  ready: () => boolean;
  heartbeatIntervalMs: () => number;
  /** What the list shortcut (list-shortcut.ts) handed on with a request: its admission, taken instead of admitting again. */
  handedOn?: HandedOnAdmissions;
}

const BASE = '/nacos/v1/ns';

/** The request's parameters: its query string and form fields (a field wins over the same query key), first value of each. */
export function paramsOf(request: FastifyRequest): NacosParams {
  return firstValues(request.body, firstValues(request.query, {}));
}

/** The source address of a request as a UDP target: an IPv4-mapped IPv6 address as plain IPv4. */
export function sourceAddressOf(request: FastifyRequest): string {
  return unmappedAddress(request.ip);
}

/**
 * The credentials of a request the ways Nacos carries them (NACOS_CARRIERS): `accessToken`,
 * else `password`, from the query or the form fields, else `Authorization: Bearer`.
 */
export function credentialsOf(request: FastifyRequest, params: NacosParams): PresentedCredentials {
  return httpCredentials({ ip: request.ip, headers: request.headers, query: params }, NACOS_CARRIERS);
}

/** Admits a request for `scope` on its namespace (the contract's access port) and gates it until the peer is ready. */
function admitted(deps: NacosRouteDeps, request: FastifyRequest, params: NacosParams, scope: Scope): { namespace: string; subject: LimitSubject } {
  const namespace = namespaceOfNacos(params.namespaceId);
  // A list the shortcut handed on was admitted (and counted) there: its admission, or its refusal.
  const handedOn = deps.handedOn?.take(request.raw);
  if (handedOn !== undefined && 'refusal' in handedOn) throw handedOn.refusal;
  const { subject } = handedOn?.admission ?? deps.access.admit(credentialsOf(request, params), scope, namespace);
  if (!deps.ready()) throw new RegistryError('REG_ERR_NOT_READY', 'this peer is still starting (loading its data dir, syncing with the cluster); try another server', 1);
  return { namespace, subject };
}

/** `admitted`, for the routes that need only the namespace. */
function admit(deps: NacosRouteDeps, request: FastifyRequest, params: NacosParams, scope: Scope): string {
  return admitted(deps, request, params, scope).namespace;
}

/** The v1 routes, each an operation of the adapter's metrics: `METHOD path` (the path after /nacos/v1). */
const HTTP_ROUTE_OPERATIONS: Readonly<Record<string, string>> = {
  'POST /nacos/v1/ns/instance': 'instance.register',
  'PUT /nacos/v1/ns/instance': 'instance.update',
  'DELETE /nacos/v1/ns/instance': 'instance.deregister',
  'GET /nacos/v1/ns/instance': 'instance.get',
  'PUT /nacos/v1/ns/instance/beat': 'instance.beat',
  [`GET ${LIST_PATH}`]: 'instance.list',
  'GET /nacos/v1/ns/service/list': 'service.list',
  'GET /nacos/v1/ns/operator/metrics': 'operator.metrics',
  'POST /nacos/v1/auth/login': 'auth.login',
  'POST /nacos/v1/auth/users/login': 'auth.login',
};

/** The operation names of the v1 routes (declared with the adapter's metrics). */
export const HTTP_OPERATIONS: readonly string[] = [...new Set(Object.values(HTTP_ROUTE_OPERATIONS))];

/** The operation of a matched route (`request.routeOptions.url`), or undefined for none (a 404). */
export function operationOfRoute(method: string, url: string | undefined): string | undefined {
  const key = `${method} ${url ?? ''}`;
  return Object.hasOwn(HTTP_ROUTE_OPERATIONS, key) ? HTTP_ROUTE_OPERATIONS[key] : undefined;
}

function fieldsOf(params: NacosParams): NacosInstanceFields {
  return params;
}

/** The instance a request names by `serviceName`, `ip` and `port`. */
function keyOf(params: NacosParams, namespace: string) {
  const { service } = parseServiceName(params.serviceName, params.groupName);
  const ip = ipParam(params.ip);
  return { namespace, service, instanceId: instanceIdOf(ip, portParam('port', params.port)) };
}

/** A beat's `beat` JSON (Nacos 1.x clients send the instance with it), or null for a light beat. */
function beatFieldsOf(params: NacosParams, namespaceId: string | undefined): NacosInstanceFields | null {
  if (params.beat === undefined || params.beat === '') return null;
  let beat: unknown;
  try {
    beat = JSON.parse(params.beat);
  } catch {
    throw invalid('beat', 'must be a JSON object');
  }
  if (beat === null || typeof beat !== 'object' || Array.isArray(beat)) throw invalid('beat', 'must be a JSON object');
  const fields = beat as Record<string, unknown>;
  return {
    namespaceId,
    serviceName: fields.serviceName ?? params.serviceName,
    groupName: params.groupName,
    ip: fields.ip,
    port: fields.port,
    clusterName: fields.cluster,
    weight: fields.weight,
    metadata: fields.metadata,
  };
}

/**
 * The answer of an admitted `instance/list` (the route's, and the shortcut's before fastify):
 * the list's shared bytes, after subscribing the requester's `udpPort` to pushes. Throws the
 * route's refusal of a bad parameter before anything is subscribed.
 */
export function listAnswer(deps: Pick<NacosRouteDeps, 'reads' | 'push' | 'holdPushTarget'>, params: NacosParams, namespace: string, subject: LimitSubject, sourceAddress: string): Buffer {
  const { group, service } = parseServiceName(params.serviceName, params.groupName);
  const zones = zonesOfClusters(params.clusters);
  const healthyOnly = booleanParam('healthyOnly', params.healthyOnly, false);
  const clusters = params.clusters ?? '';
  // The client's cache key is the name it asked for (group included).
  const name = groupedName(group, service);
  const udpPort = params.udpPort === undefined || params.udpPort === '' || params.udpPort === '0' ? 0 : portParam('udpPort', params.udpPort);
  if (udpPort > 0 && deps.push) {
    // Refused (the requester's share of push targets is held): answered all the same, not pushed; the client polls.
    deps.push.subscribe({ address: sourceAddress, port: udpPort, namespace, service, group, name, clusters, zones }, deps.holdPushTarget(subject));
  }
  return deps.reads.hostsOf(namespace, service).listBody(name, group, clusters, zones, healthyOnly);
}

const text = (reply: FastifyReply, body: string) => reply.type('text/plain; charset=utf-8').send(body);
const json = (reply: FastifyReply, body: Buffer) => reply.type('application/json; charset=utf-8').send(body);

/** The v1 naming routes (docs/nacos.md): instance, beat, list, service list, metrics and login. */
export function nacosRoutes(app: FastifyInstance, deps: NacosRouteDeps): void {
  app.post(`${BASE}/instance`, (request, reply) => {
    const params = paramsOf(request);
    admit(deps, request, params, 'write');
    return whenDurable(deps.writes.register(fieldsOf(params)), () => text(reply, 'ok'));
  });

  app.put(`${BASE}/instance`, (request, reply) => {
    const params = paramsOf(request);
    admit(deps, request, params, 'write');
    return whenDurable(deps.writes.update(fieldsOf(params)), () => text(reply, 'ok'));
  });

  app.delete(`${BASE}/instance`, (request, reply) => {
    const params = paramsOf(request);
    const removed = deps.writes.deregister(keyOf(params, admit(deps, request, params, 'write')));
    return removed === null ? text(reply, 'ok') : whenDurable(removed, () => text(reply, 'ok'));
  });

  app.get(`${BASE}/instance`, (request, reply) => {
    const params = paramsOf(request);
    const key = keyOf(params, admit(deps, request, params, 'read'));
    const entry = deps.services.find(key);
    const { group } = parseServiceName(params.serviceName, params.groupName);
    if (!entry || entry.hidden || (entry.record.data.group ?? DEFAULT_GROUP) !== group) {
      throw new RegistryError('REG_ERR_INSTANCE_NOT_FOUND', `no instance ${key.instanceId} in service ${groupedName(group, key.service)}`);
    }
    const host = nacosHostOf(entry, deps.heartbeatIntervalMs());
    return reply.send({ service: host.serviceName, ip: host.ip, port: host.port, clusterName: host.clusterName, weight: host.weight, healthy: host.healthy, enabled: host.enabled, ephemeral: true, instanceId: host.instanceId, metadata: host.metadata });
  });

  app.put(`${BASE}/instance/beat`, (request, reply) => {
    const params = paramsOf(request);
    const namespace = admit(deps, request, params, 'write');
    const beat = beatFieldsOf(params, params.namespaceId);
    const ip = params.ip ?? (beat?.ip as string | undefined);
    const port = params.port ?? (beat?.port as string | number | undefined);
    const { service } = parseServiceName(params.serviceName ?? beat?.serviceName, params.groupName);
    const key = { namespace, service, instanceId: instanceIdOf(ipParam(ip), portParam('port', port)) };
    const answer = (result: { code: number; clientBeatIntervalMs: number }) =>
      reply.send({ clientBeatInterval: result.clientBeatIntervalMs, code: result.code, lightBeatEnabled: true });
    const result = deps.writes.beat(key, beat);
    return result instanceof Promise ? result.then(answer) : answer(result);
  });

  app.get(LIST_PATH, (request, reply) => {
    const params = paramsOf(request);
    const { namespace, subject } = admitted(deps, request, params, 'read');
    return json(reply, listAnswer(deps, params, namespace, subject, sourceAddressOf(request)));
  });

  app.get(`${BASE}/service/list`, async (request, reply) => {
    const params = paramsOf(request);
    const namespace = admit(deps, request, params, 'read');
    const group = params.groupName ? parseName('groupName', params.groupName) : DEFAULT_GROUP;
    const pageNo = params.pageNo === undefined ? 1 : Math.max(1, integerParam('pageNo', params.pageNo));
    const pageSize = params.pageSize === undefined ? 10 : Math.min(10_000, Math.max(1, integerParam('pageSize', params.pageSize)));
    const names = (await serviceSummaries(deps.services, namespace, group)).map((summary) => summary.service);
    const start = (pageNo - 1) * pageSize;
    return reply.send({ count: names.length, doms: names.slice(start, start + pageSize) });
  });

  app.get(`${BASE}/operator/metrics`, async (request, reply) => {
    deps.access.admit(credentialsOf(request, paramsOf(request)), null);
    const { serviceCount, instanceCount } = await deps.reads.counts();
    return reply.send({
      status: deps.ready() ? 'UP' : 'DOWN',
      serviceCount,
      instanceCount,
      subscribeCount: deps.push?.size ?? 0,
      responsibleServiceCount: serviceCount,
      responsibleInstanceCount: instanceCount,
      raftNotifyTaskCount: 0,
      clientCount: 0,
      cpu: 0,
      load: 0,
      mem: 0,
    });
  });

  const login = (request: FastifyRequest, reply: FastifyReply) => {
    const params = paramsOf(request);
    // The password is the token; a login never reads an accessToken or Authorization it was sent.
    const principal = deps.access.login({ address: request.ip, token: params.password || undefined });
    if (principal === undefined) return reply.send({ accessToken: '', tokenTtl: TOKEN_TTL_SECONDS, globalAdmin: true, username: params.username ?? '' });
    // The token itself is the access token: stateless, so it works on every peer.
    return reply.send({ accessToken: params.password, tokenTtl: TOKEN_TTL_SECONDS, globalAdmin: false, username: principal.name });
  };
  app.post('/nacos/v1/auth/login', login);
  app.post('/nacos/v1/auth/users/login', login);
}

function integerParam(field: string, value: string): number {
  if (!/^\d{1,9}$/.test(value)) throw invalid(field, 'must be a positive integer');
  return Number(value);
}

