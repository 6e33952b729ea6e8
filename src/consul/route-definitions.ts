import { Type, type TSchema } from 'typebox';
import { text } from '../http/openapi/schemas.js';
import { definitionLookup, type RouteDefinition, type RouteDoc, type RouteGroup } from '../http/route-definition.js';

/**
 * The Consul-compatible API's routes (docs/consul.md), declared once: the Consul app registers
 * each from its definition (`serve`), its guard (guard.ts) reads the access class and the
 * readiness gating from it, and its OpenAPI description (`GET /docs/json` on the Consul
 * listener) is built from the docs here. The access classes mean what they mean on `/v1`
 * (`read`, `write`: a client token with that scope on the request's namespace; `public`:
 * anyone), with the token and namespace presented the Consul ways (access.ts).
 */

const AGENT = 'Consul agent';
const CATALOG = 'Consul catalog and health';
const STATUS = 'Consul status';

/** Consul's errors are plain text with a status code (errors.ts), never `{code, message}`. */
const plainErrors = (statuses: number[]): Record<number, TSchema> =>
  Object.fromEntries(statuses.map((status) => [status, text('Plain text: what is wrong, naming the field (docs/consul.md, "Errors").')]));
const empty = Type.Null({ description: 'Empty, as Consul answers a write.' });
const json = (description: string) => Type.Unknown({ description });

const CommonQuery = {
  ns: Type.Optional(Type.String({ description: 'Namespace (one of `consul.namespaces`; the first by default). `X-Consul-Namespace` also works.' })),
  token: Type.Optional(Type.String({ description: 'The client token (older clients); `X-Consul-Token` or `Authorization: Bearer` also work.' })),
};
const BlockingQuery = {
  ...CommonQuery,
  index: Type.Optional(Type.String({ description: 'Blocking query: wait until the index passes this one (docs/consul.md, "Blocking queries").' })),
  wait: Type.Optional(Type.String({ description: 'Blocking query: the longest wait (`10s`, `5m`; at most `consul.blockingWaitMaxMs`).' })),
  dc: Type.Optional(Type.String({ description: 'Only the instances of this datacenter (region).' })),
  tag: Type.Optional(Type.String({ description: 'Only the instances with this tag (repeatable: every tag).' })),
  near: Type.Optional(Type.String({ description: 'Sort by distance from this node (`_agent`: this peer).' })),
};
const ServiceIdParams = Type.Object({ id: Type.String({ description: 'Service (instance) ID.' }) });
const CheckIdParams = Type.Object({ check_id: Type.String({ description: 'Check ID (`service:<ID>` by default).' }) });
const NameParams = Type.Object({ name: Type.String({ description: 'Service name (any case).' }) });
const NoteQuery = Type.Object({ ...CommonQuery, note: Type.Optional(Type.String({ description: "The check's new output." })) });

/** A route that reads or writes the registry: closed (503) until the start-up sync is done, as on `/v1`. */
const read = { access: 'read', gatedUntilReady: true } as const;
const write = { access: 'write', gatedUntilReady: true } as const;
/** Open to any client, as in Consul; answered from this peer's own view (membership, config), so never gated. */
const open = { access: 'public', gatedUntilReady: false } as const;
/**
 * What tells about the cluster itself (its peers' addresses, its regions, the API document):
 * the scope `/v1/cluster` needs on the native API, so that the Consul port shows no more to a
 * client without it; open when no token is configured (dev mode), as on /v1. Never gated.
 */
const cluster = { access: 'admin', gatedUntilReady: false } as const;

const agentDoc = (summary: string, parts: Partial<RouteDoc> = {}): RouteDoc => ({ summary, tags: [AGENT], querystring: Type.Object(CommonQuery), ...parts });

const deregisterDoc = agentDoc('Deregister an instance', {
  params: ServiceIdParams,
  response: { 200: empty, ...plainErrors([403, 404, 503]) },
});
const deregisterGetDoc = agentDoc('Deregister an instance by GET, as python-consul 0.7 sends: 405 unless `consul.allowGetWrites`', {
  params: ServiceIdParams,
  response: { 200: empty, ...plainErrors([403, 404, 405, 503]) },
});

/** The pass, warn or fail route of a TTL check, as PUT or as GET (Consul before 1.0 took GET: 405 unless `consul.allowGetWrites`). */
function checkVerb(verb: 'pass' | 'warn' | 'fail', method: 'PUT' | 'GET'): RouteDefinition {
  const status = verb === 'pass' ? 'passing' : verb === 'warn' ? 'warning' : 'critical';
  const byGet = method === 'GET' ? ', by GET: 405 unless `consul.allowGetWrites`' : '';
  const doc = agentDoc(`Set a TTL check to ${status} (renews the lease unless critical)${byGet}`, {
    params: CheckIdParams,
    querystring: NoteQuery,
    response: { 200: empty, ...plainErrors(method === 'GET' ? [400, 403, 404, 405, 503] : [400, 403, 404, 503]) },
  });
  return { method, url: `/v1/agent/check/${verb}/:check_id`, ...write, doc };
}

const serviceRead = (summary: string, extra: Record<string, TSchema> = {}): RouteDoc => ({
  summary,
  tags: [CATALOG],
  params: NameParams,
  querystring: Type.Object({ ...BlockingQuery, ...extra }),
  response: { 200: json('JSON array (docs/consul.md, "Routes"); `X-Consul-Index` header.'), ...plainErrors([400, 403, 429, 500, 503]) },
});

export const CONSUL_ROUTES = {
  register: {
    method: 'PUT',
    url: '/v1/agent/service/register',
    ...write,
    doc: agentDoc('Register an instance, with its TTL checks', {
      body: Type.Object({}, { description: 'An AgentServiceRegistration: `Name`, `ID`, `Address`, `Port`, `Tags`, `Meta`, `Weights`, `Check`/`Checks` (field names in any case).' }),
      response: { 200: empty, ...plainErrors([400, 403, 409, 413, 503]) },
    }),
  },
  deregister: { method: 'PUT', url: '/v1/agent/service/deregister/:id', ...write, doc: deregisterDoc },
  deregisterGet: { method: 'GET', url: '/v1/agent/service/deregister/:id', ...write, doc: deregisterGetDoc },
  agentServices: {
    method: 'GET',
    url: '/v1/agent/services',
    ...read,
    doc: agentDoc("The instances whose lease this peer holds (the agent's services)", { response: { 200: json('`{ID: AgentService}`'), ...plainErrors([400, 403]) } }),
  },
  agentChecks: {
    method: 'GET',
    url: '/v1/agent/checks',
    ...read,
    doc: agentDoc('The checks of the instances this peer holds', { response: { 200: json('`{CheckID: HealthCheck}`'), ...plainErrors([403]) } }),
  },
  agentService: {
    method: 'GET',
    url: '/v1/agent/service/:id',
    ...read,
    doc: agentDoc('One instance of the namespace, as an AgentService', { params: ServiceIdParams, response: { 200: json('AgentService, with `ContentHash`'), ...plainErrors([403, 404]) } }),
  },
  checkPass: checkVerb('pass', 'PUT'),
  checkPassGet: checkVerb('pass', 'GET'),
  checkWarn: checkVerb('warn', 'PUT'),
  checkWarnGet: checkVerb('warn', 'GET'),
  checkFail: checkVerb('fail', 'PUT'),
  checkFailGet: checkVerb('fail', 'GET'),
  checkUpdate: {
    method: 'PUT',
    url: '/v1/agent/check/update/:check_id',
    ...write,
    doc: agentDoc('Set a TTL check\'s status and output (renews the lease unless critical)', {
      params: CheckIdParams,
      body: Type.Object({ Status: Type.String({ description: 'passing, warning or critical' }), Output: Type.Optional(Type.String()) }),
      response: { 200: empty, ...plainErrors([400, 403, 404, 503]) },
    }),
  },
  agentSelf: {
    method: 'GET',
    url: '/v1/agent/self',
    // Needs a read token as in Consul, but answers from this peer's config: never gated.
    access: 'read',
    gatedUntilReady: false,
    doc: { summary: 'This peer as a Consul agent: a minimal `Config` and `Member`', tags: [STATUS], querystring: Type.Object(CommonQuery), response: { 200: json('`{Config, Member, Meta, Stats}`'), ...plainErrors([403]) } },
  },
  catalogServices: {
    method: 'GET',
    url: '/v1/catalog/services',
    ...read,
    doc: {
      summary: 'The services with a served instance, and their tags (blocking on the namespace)',
      tags: [CATALOG],
      querystring: Type.Object({ ...CommonQuery, index: BlockingQuery.index, wait: BlockingQuery.wait, dc: BlockingQuery.dc }),
      response: { 200: json('`{service: [tags]}`; `X-Consul-Index` header.'), ...plainErrors([400, 403, 429, 500, 503]) },
    },
  },
  catalogService: { method: 'GET', url: '/v1/catalog/service/:name', ...read, doc: serviceRead("A service's instances as CatalogService entries (blocking on the service)") },
  healthService: {
    method: 'GET',
    url: '/v1/health/service/:name',
    ...read,
    doc: serviceRead("A service's instances with their checks (blocking on the service)", {
      passing: Type.Optional(Type.String({ description: 'Only the instances whose every check passes.' })),
    }),
  },
  healthChecks: { method: 'GET', url: '/v1/health/checks/:name', ...read, doc: serviceRead("The checks of a service's instances (blocking on the service)") },
  catalogDatacenters: {
    method: 'GET',
    url: '/v1/catalog/datacenters',
    ...cluster,
    doc: { summary: 'The regions this peer knows, sorted (admin scope, as /v1/cluster)', tags: [CATALOG], response: { 200: json('`["region", ...]`'), ...plainErrors([403]) } },
  },
  statusLeader: {
    method: 'GET',
    url: '/v1/status/leader',
    ...open,
    doc: { summary: 'This peer, as `"host:port"` of its Consul listener (every peer leads its own view)', tags: [STATUS], response: { 200: json('`"host:port"`') } },
  },
  statusPeers: {
    method: 'GET',
    url: '/v1/status/peers',
    ...cluster,
    doc: { summary: 'The peers membership sees up or suspect, at this listener\'s port (admin scope, as /v1/cluster)', tags: [STATUS], response: { 200: json('`["host:port", ...]`'), ...plainErrors([403]) } },
  },
  // The listener's own OpenAPI description, built from the docs above (hidden from itself).
  openapi: { method: 'GET', url: '/docs/json', ...cluster },
} satisfies RouteGroup;

/** Every route of the Consul listener, as registered. */
export const CONSUL_ROUTE_LIST: readonly RouteDefinition[] = Object.values(CONSUL_ROUTES);

/** The definition of a Consul route by method and pattern (HEAD shares GET's), or undefined. */
export const consulDefinitionOf = definitionLookup(CONSUL_ROUTE_LIST);
