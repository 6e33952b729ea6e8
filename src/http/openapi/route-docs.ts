import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { Type } from 'typebox';
import { peerMethods } from '../../transport/transport.js';
import {
  Cancelled,
  ClusterView,
  EvictionGuards,
  GuardModes,
  Instance,
  InstanceParams,
  InstanceWithInterval,
  NamespaceQuery,
  Probe,
  PrometheusSdQuery,
  RegisterBody,
  responses,
  ServiceList,
  ServiceListing,
  ServiceParams,
  ServiceQuery,
  StatusBody,
  TargetGroups,
  text,
  WatchQuery,
} from './schemas.js';

/** What the OpenAPI description says about one route. */
export type RouteDoc = FastifySchema & { summary: string; description?: string; tags: string[] };

const EUREKA = 'Eureka';
const AppParams = Type.Object({ app: Type.String({ description: 'App name, any case (Eureka upper-cases it).' }) });
const AppInstanceParams = Type.Object({ app: AppParams.properties.app, id: Type.String({ description: 'Instance id.' }) });
const eurekaDocument = (what: string) => text(`${what}: JSON when \`Accept\` mentions json, XML otherwise; gzip when asked.`);
const emptyNotFound = text('Empty: Eureka clients expect a bare 404.');

/**
 * The documentation of every route, keyed `METHOD /path` (Eureka routes `METHOD eureka:/path`,
 * once for both of their prefixes). A test fails when a route has no entry here, so the
 * OpenAPI description at /docs/json always covers the whole API.
 */
const routeDocs: Record<string, RouteDoc> = {
  'POST /v1/instances': {
    summary: 'Register an instance, or register it again',
    description: 'Answers 201 for a new instance, 200 for a re-registration; the answer says how often to heartbeat.',
    tags: ['instances'],
    querystring: NamespaceQuery,
    body: RegisterBody,
    response: responses({ 200: InstanceWithInterval, 201: InstanceWithInterval }, [400, 413, 415]),
  },
  'PUT /v1/services/:service/instances/:id/heartbeat': {
    summary: 'Renew the lease of an instance on this peer',
    description: 'Never replicated. 404 means this peer does not know the instance: register again.',
    tags: ['instances'],
    params: InstanceParams,
    querystring: NamespaceQuery,
    response: responses({ 200: InstanceWithInterval }, [400, 404]),
  },
  'PUT /v1/services/:service/instances/:id/status': {
    summary: "Change an instance's status",
    tags: ['instances'],
    params: InstanceParams,
    querystring: NamespaceQuery,
    body: StatusBody,
    response: responses({ 200: Instance }, [400, 404, 415]),
  },
  'DELETE /v1/services/:service/instances/:id': {
    summary: 'Cancel an instance',
    tags: ['instances'],
    params: InstanceParams,
    querystring: NamespaceQuery,
    response: responses({ 200: Cancelled }, [400, 404]),
  },
  'GET /v1/services/:service/instances/:id': {
    summary: 'One instance, whatever its status',
    tags: ['instances'],
    params: InstanceParams,
    querystring: NamespaceQuery,
    response: responses({ 200: Instance }, [400, 404]),
  },
  'GET /v1/services/:service': {
    summary: "A service's instances (long poll with ?index=)",
    description: 'By default the UP instances with a live lease; `?status=all` for every status. The `X-Registry-Index` header carries the revision.',
    tags: ['services'],
    params: ServiceParams,
    querystring: ServiceQuery,
    response: responses({ 200: ServiceListing }, [400, 429]),
  },
  'GET /v1/services': {
    summary: 'Every service of a namespace with its instance counts',
    tags: ['services'],
    querystring: NamespaceQuery,
    response: responses({ 200: ServiceList }, [400]),
  },
  'GET /v1/watch': {
    summary: 'Server-sent events: a snapshot per service, then deltas',
    description: 'Events `snapshot`, `delta` (added, changed, removed) and `dropped`; a keep-alive comment on an idle stream.',
    tags: ['services'],
    querystring: WatchQuery,
    response: responses({ 200: text('text/event-stream') }, [400, 429]),
  },
  'GET /v1/sd/prometheus': {
    summary: 'Prometheus HTTP service discovery: target groups of the UP instances',
    description:
      'The JSON list `http_sd_configs` reads: one group `{targets: ["host:port"], labels}` per UP instance with a live lease, with `__meta_registry_*` labels (docs/prometheus.md).',
    tags: ['services'],
    querystring: PrometheusSdQuery,
    response: responses({ 200: TargetGroups }, [400, 429]),
  },
  'GET /v1/cluster': {
    summary: "This peer's view of the cluster",
    tags: ['operations'],
    response: { 200: ClusterView },
  },
  'GET /healthz': { summary: 'Liveness: the process runs', tags: ['operations'], response: { 200: Probe } },
  'GET /readyz': {
    summary: 'Readiness: the start-up sync is done',
    tags: ['operations'],
    response: responses({ 200: Probe }, [503]),
  },
  'GET /metrics': {
    summary: 'Prometheus metrics (docs/metrics.md)',
    tags: ['operations'],
    response: { 200: text('Prometheus text format 0.0.4') },
  },
  'GET /v1/admin/eviction-guards': {
    summary: 'State of the eviction guards',
    tags: ['admin'],
    response: { 200: EvictionGuards },
  },
  'PUT /v1/admin/eviction-guards': {
    summary: 'Switch self-preservation or the partition guard off, or back to auto',
    tags: ['admin'],
    body: GuardModes,
    response: responses({ 200: EvictionGuards }, [400, 415]),
  },
  'POST /v1/peer/:method': {
    summary: 'Peer API: replication, probes, anti-entropy, snapshots',
    description: 'How peers talk to each other (docs/replication.md); clients never need it.',
    tags: ['peer'],
    params: Type.Object({ method: Type.Union(peerMethods.map((method) => Type.Literal(method))) }),
    body: Type.Object({}, { description: 'The method\'s request (docs/replication.md).' }),
    response: responses({ 200: Type.Object({}, { description: "The method's answer." }) }, [400, 404, 413]),
  },
  'GET /': {
    summary: 'The dashboard (HTML)',
    tags: ['dashboard'],
    response: responses({ 200: text('text/html') }, [503]),
  },
  'GET /ui/:file': {
    summary: "The dashboard's assets (scripts, styles), served by the peer",
    tags: ['dashboard'],
    params: Type.Object({ file: Type.String() }),
    response: responses({ 200: text('JavaScript, CSS or an image') }, [404, 503]),
  },
  'GET eureka:/apps': { summary: 'Every app', tags: [EUREKA], response: { 200: eurekaDocument('applications') } },
  'GET eureka:/apps/': { summary: 'Every app (eureka-js-client asks with the slash)', tags: [EUREKA], response: { 200: eurekaDocument('applications') } },
  'GET eureka:/apps/delta': {
    summary: 'What changed in the last `cluster.eurekaDeltaWindowMs`',
    tags: [EUREKA],
    response: { 200: eurekaDocument('applications (delta), with the whole registry\'s hash code') },
  },
  'GET eureka:/apps/:app': {
    summary: 'One app',
    tags: [EUREKA],
    params: AppParams,
    response: { 200: eurekaDocument('application'), 404: emptyNotFound },
  },
  'POST eureka:/apps/:app': {
    summary: 'Register an instance (answers 204)',
    tags: [EUREKA],
    params: AppParams,
    body: Type.Object({ instance: Type.Object({}, { description: 'A Eureka instance (docs/eureka.md); JSON or XML.' }) }),
    response: responses({ 204: Type.Null({ description: 'Registered.' }) }, [400, 413, 415]),
  },
  'GET eureka:/apps/:app/:id': {
    summary: 'One instance of an app',
    tags: [EUREKA],
    params: AppInstanceParams,
    response: { 200: eurekaDocument('instance'), 404: emptyNotFound },
  },
  'PUT eureka:/apps/:app/:id': {
    summary: 'Heartbeat (404: register again)',
    tags: [EUREKA],
    params: AppInstanceParams,
    querystring: Type.Object({
      status: Type.Optional(Type.String()),
      lastDirtyTimestamp: Type.Optional(Type.String()),
      overriddenstatus: Type.Optional(Type.String()),
    }),
    response: { 200: Type.Null({ description: 'Renewed.' }), 404: emptyNotFound },
  },
  'DELETE eureka:/apps/:app/:id': {
    summary: 'Cancel an instance',
    tags: [EUREKA],
    params: AppInstanceParams,
    response: { 200: Type.Null({ description: 'Cancelled.' }), 404: emptyNotFound },
  },
  'PUT eureka:/apps/:app/:id/status': {
    summary: 'Override the status',
    tags: [EUREKA],
    params: AppInstanceParams,
    querystring: Type.Object({ value: Type.String({ description: 'UP, DOWN, STARTING or OUT_OF_SERVICE.' }), lastDirtyTimestamp: Type.Optional(Type.String()) }),
    response: responses({ 200: Type.Null({ description: 'Done.' }), 404: emptyNotFound }, [400]),
  },
  'DELETE eureka:/apps/:app/:id/status': {
    summary: 'Remove the status override',
    tags: [EUREKA],
    params: AppInstanceParams,
    querystring: Type.Object({ value: Type.Optional(Type.String()) }),
    response: { 200: Type.Null({ description: 'Done.' }), 404: emptyNotFound },
  },
  'PUT eureka:/apps/:app/:id/metadata': {
    summary: 'Add or replace metadata (`?key=value&...`)',
    tags: [EUREKA],
    params: AppInstanceParams,
    response: responses({ 200: Type.Null({ description: 'Done.' }), 404: emptyNotFound }, [400]),
  },
  'GET eureka:/instances/:id': {
    summary: 'One instance, any app',
    tags: [EUREKA],
    params: Type.Object({ id: Type.String() }),
    response: { 200: eurekaDocument('instance'), 404: emptyNotFound },
  },
  'GET eureka:/vips/:vip': {
    summary: 'Instances on a VIP address',
    tags: [EUREKA],
    params: Type.Object({ vip: Type.String() }),
    response: { 200: eurekaDocument('applications') },
  },
  'GET eureka:/svips/:svip': {
    summary: 'Instances on a secure VIP address',
    tags: [EUREKA],
    params: Type.Object({ svip: Type.String() }),
    response: { 200: eurekaDocument('applications') },
  },
};

/** The documentation of a route, or undefined when it has none. `eurekaPrefixes` fold both layouts into one key. */
export function routeDocFor(method: string, url: string, eurekaPrefixes: readonly string[]): RouteDoc | undefined {
  const prefix = eurekaPrefixes.find((candidate) => url.startsWith(`${candidate}/`));
  const key = prefix ? `${method} eureka:${url.slice(prefix.length)}` : `${method} ${url}`;
  const doc = routeDocs[key];
  if (!doc || !prefix) return doc;
  return { ...doc, tags: [`${EUREKA} ${prefix}`] };
}

/** Accepts any input: the domain validators (src/registry/validate.ts) stay the only judges. */
const acceptAll = () => () => true;
/** What fastify does without a response schema: plain JSON.stringify, every field kept. */
const plainJson = () => (data: unknown) => JSON.stringify(data);

/**
 * Attaches each route's documentation as its fastify schema, as the route is added, for
 * @fastify/swagger to describe. The schemas are documentation only, on purpose: fastify's own
 * validator would answer first, with its own messages (and coerce types), where the domain
 * validator names the field and its rule and picks the error code (400, 413, 415); and a
 * response schema would make fastify serialize through it and drop any field it does not list.
 * So each documented route gets a validator that accepts everything and the plain JSON
 * serializer: behaviour stays exactly what it was without schemas.
 */
export function attachRouteDocs(app: FastifyInstance, eurekaPrefixes: readonly string[]): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.schema?.hide) return;
    const methods = [route.method].flat();
    const doc = methods.map((method) => routeDocFor(method, route.url, eurekaPrefixes)).find(Boolean);
    if (!doc) return;
    route.schema = { ...doc, ...route.schema };
    route.validatorCompiler = acceptAll;
    route.serializerCompiler = plainJson;
  });
}
