import type { Scope } from '../config/security.js';
import { EUREKA_PREFIXES } from '../eureka/routes.js';

/**
 * The access class of every route, in one table keyed `METHOD pattern` exactly as fastify
 * registers it. The access guard (access-guard.ts) applies it to every request; a route
 * missing here is refused (403) and logged at error when it is added, and a unit test fails
 * for it. There are no prefix rules on purpose: a new route under `/v1/admin` or `/eureka`
 * needs its own line, so nobody adds a route without deciding who may call it.
 *
 * - `public`: anyone (liveness and readiness probes, and static files that hold no registry
 *   data: the dashboard's page and assets, the API description);
 * - `read`, `write`: a token with that scope on the request's namespace (`write` implies `read`);
 * - `admin`: a token with the admin scope (operator routes; not bound to a namespace);
 * - `peer`: another peer: a request signed with the cluster secret, or a verified peer
 *   certificate; client tokens never work here;
 * - `eureka-read`, `eureka-write`: as read and write, on the configured Eureka namespace,
 *   with the token as a bearer token or as the password of HTTP basic authentication.
 */
export type AccessClass = 'public' | 'read' | 'write' | 'admin' | 'peer' | 'eureka-read' | 'eureka-write';

/** The Eureka routes, as registered under each prefix (routes.ts). */
const EUREKA_ROUTES: Record<string, 'eureka-read' | 'eureka-write'> = {
  'GET /apps': 'eureka-read',
  'GET /apps/': 'eureka-read',
  'GET /apps/delta': 'eureka-read',
  'GET /apps/:app': 'eureka-read',
  'POST /apps/:app': 'eureka-write',
  'GET /apps/:app/:id': 'eureka-read',
  'PUT /apps/:app/:id': 'eureka-write',
  'DELETE /apps/:app/:id': 'eureka-write',
  'PUT /apps/:app/:id/status': 'eureka-write',
  'DELETE /apps/:app/:id/status': 'eureka-write',
  'PUT /apps/:app/:id/metadata': 'eureka-write',
  'GET /instances/:id': 'eureka-read',
  'GET /vips/:vip': 'eureka-read',
  'GET /svips/:svip': 'eureka-read',
};

function eurekaEntries(): [string, AccessClass][] {
  return EUREKA_PREFIXES.flatMap((prefix) =>
    Object.entries(EUREKA_ROUTES).map(([route, access]): [string, AccessClass] => {
      const [method, path] = route.split(' ') as [string, string];
      return [`${method} ${prefix}${path}`, access];
    }),
  );
}

export const ACCESS_POLICY: ReadonlyMap<string, AccessClass> = new Map<string, AccessClass>([
  ['GET /healthz', 'public'],
  ['GET /readyz', 'public'],
  // The cluster view spans every namespace (counts, peers, replication): operators only.
  ['GET /v1/cluster', 'admin'],
  ['GET /v1/admin/eviction-guards', 'admin'],
  ['PUT /v1/admin/eviction-guards', 'admin'],
  ['POST /v1/instances', 'write'],
  ['PUT /v1/services/:service/instances/:id/heartbeat', 'write'],
  ['PUT /v1/services/:service/instances/:id/status', 'write'],
  ['DELETE /v1/services/:service/instances/:id', 'write'],
  ['GET /v1/services/:service/instances/:id', 'read'],
  ['GET /v1/services/:service', 'read'],
  ['GET /v1/services', 'read'],
  ['GET /v1/watch', 'read'],
  // Prometheus HTTP service discovery: a read of the namespace, like a listing.
  ['GET /v1/sd/prometheus', 'read'],
  ['POST /v1/peer/:method', 'peer'],
  ...eurekaEntries(),
  // Prometheus figures span every namespace (service names, counts, peers): operators only;
  // scrapers send the token as a bearer token.
  ['GET /metrics', 'admin'],
  // Static files with no registry data: the dashboard's page and assets (it then calls the
  // API with the token the user gives it) and the API description. A browser cannot send a
  // bearer token with a page load, so these stay public.
  ['GET /', 'public'],
  ['GET /ui/:file', 'public'],
  ['GET /docs', 'public'],
  ['GET /docs/json', 'public'],
  ['GET /docs/yaml', 'public'],
  ['GET /docs/static/index.html', 'public'],
  ['GET /docs/static/swagger-initializer.js', 'public'],
  ['GET /docs/static/*', 'public'],
]);

/** The access class of a route (HEAD routes share their GET's), or undefined when it has none. */
export function accessOf(method: string, routePattern: string): AccessClass | undefined {
  return ACCESS_POLICY.get(`${method === 'HEAD' ? 'GET' : method} ${routePattern}`);
}

/** The scope a client class needs; undefined for classes that take no client token. */
export function scopeOf(access: AccessClass): Scope | undefined {
  switch (access) {
    case 'read':
    case 'eureka-read':
      return 'read';
    case 'write':
    case 'eureka-write':
      return 'write';
    case 'admin':
      return 'admin';
    default:
      return undefined;
  }
}
