import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RegistryNode } from '../node.js';
import type { ConsulAccess } from './access.js';
import type { LimitSubject } from '../adapters/limits.js';
import { ConsulError } from './errors.js';
import { consulDefinitionOf } from './route-definitions.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The namespace a Consul request was authorized on (guard.ts); null on open routes. */
    consulNamespace: string | null;
    /** Whom the limits count the request against (held-query shares); null until authorized. */
    consulSubject: LimitSubject | null;
  }
}

/** What the guard answers while the start-up sync runs: Consul's clients read 503 as "try another agent". */
const NOT_READY = 'this peer is still starting (loading its data dir, syncing with the cluster); try another peer';

/**
 * Applies each Consul route's definition (route-definitions.ts) before its handler, as the
 * access guard and the readiness gate do for /v1, in `onRequest` (before any body is read):
 * - the access class: `public` counts the request against the rate limit only; `read` and
 *   `write` authorize its token for that scope on its namespace (which handlers then read
 *   with `namespaceOf`); `admin` (what tells about the cluster) needs that scope, as
 *   /v1/cluster; a route with no definition is refused; a `write` by GET is refused (405)
 *   unless `consul.allowGetWrites`;
 * - `gatedUntilReady`: 503 with `Retry-After` until the start-up sync is done.
 * A request for no route is still counted against its address, as on /v1. Refusals are
 * ConsulErrors, answered in plain text by errors.ts.
 */
export function installConsulGuard(app: FastifyInstance, access: ConsulAccess, node: Pick<RegistryNode, 'ready'>, allowGetWrites: boolean): void {
  app.decorateRequest('consulNamespace', null);
  app.decorateRequest('consulSubject', null);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD' && consulDefinitionOf(method, route.url) === undefined) {
        app.log.error({ method, route: route.url }, 'Consul route has no definition: every request to it is refused (add it to src/consul/route-definitions.ts)');
      }
    }
  });
  app.addHook('onRequest', (request, _reply, done) => {
    try {
      admit(request, access, node, allowGetWrites);
      done();
    } catch (error) {
      done(error as Error);
    }
  });
}

function admit(request: FastifyRequest, access: ConsulAccess, node: Pick<RegistryNode, 'ready'>, allowGetWrites: boolean): void {
  const pattern = request.routeOptions.url;
  if (pattern === undefined) return access.open(request);
  const definition = consulDefinitionOf(request.method, pattern);
  if (definition === undefined) throw new ConsulError(403, `Permission denied: ${request.method} ${pattern} has no access policy (add it to src/consul/route-definitions.ts)`);
  if (definition.access === 'write' && (request.method === 'GET' || request.method === 'HEAD')) refuseGetWrite(request, pattern, allowGetWrites);
  if (definition.access === 'public') access.open(request);
  else if (definition.access === 'read' || definition.access === 'write' || definition.access === 'admin') {
    const granted = access.authorize(request, definition.access);
    request.consulNamespace = granted.namespace;
    request.consulSubject = granted.subject;
  }
  else throw new ConsulError(403, `Permission denied: access class ${definition.access} is not served on the Consul API`);
  if (definition.gatedUntilReady && !node.ready) throw new ConsulError(503, NOT_READY, 1);
}

/** Whether a request carries what only a browser sends (forbidden headers a page cannot take off). */
function fromBrowser(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  return request.headers.origin !== undefined || request.headers.referer !== undefined || (site !== undefined && site !== 'none');
}

/**
 * A write by GET: 405 (Consul's answer since 1.0, with `Allow: PUT`) unless
 * `consul.allowGetWrites` is on for pre-1.0 clients, and even then when a browser made it, so
 * that a link or an image on a web page cannot deregister or fail instances.
 */
function refuseGetWrite(request: FastifyRequest, pattern: string, allowGetWrites: boolean): void {
  if (allowGetWrites && !fromBrowser(request)) return;
  const why = allowGetWrites ? 'a browser request (Origin, Referer or Sec-Fetch-Site) may not write by GET' : 'set consul.allowGetWrites for clients older than Consul 1.0 (python-consul 0.7)';
  throw new ConsulError(405, `Method ${request.method} not allowed on ${pattern}: send PUT (${why})`, undefined, { Allow: 'PUT' });
}

/** The namespace the guard authorized a request on; only for routes of class read or write. */
export function namespaceOf(request: FastifyRequest): string {
  if (request.consulNamespace === null) throw new Error(`${request.method} ${request.routeOptions.url}: no namespace authorized (is its access class read or write?)`);
  return request.consulNamespace;
}

/** Whom the limits count a request authorized by the guard against (its valid token, else its address). */
export function limitSubjectOf(request: FastifyRequest): LimitSubject {
  return request.consulSubject ?? { address: request.ip };
}
