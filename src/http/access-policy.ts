import type { Scope } from '../config/security.js';
import { HTTP_ROUTES } from './route-catalogue.js';
import { routeKey, type AccessClass } from './route-definition.js';

export type { AccessClass } from './route-definition.js';

/**
 * The access class of every route, keyed `METHOD pattern` exactly as fastify registers it,
 * built from the route definitions (route-catalogue.ts; each route states its class where it
 * is declared). The access guard (access-guard.ts) applies it to every request; a route
 * missing here is refused (403) and logged at error when it is added, and a unit test fails
 * for it. There are no prefix rules on purpose: a new route under `/v1/admin` or `/eureka`
 * states its own class, so nobody adds a route without deciding who may call it.
 */
export const ACCESS_POLICY: ReadonlyMap<string, AccessClass> = new Map(
  HTTP_ROUTES.map((definition) => [routeKey(definition.method, definition.url), definition.access]),
);

/**
 * The same classes by route pattern, then method: the guard looks one up for every request,
 * and the pattern is a string fastify holds per route (its hash is kept), where the
 * `METHOD pattern` key would be a new string to build and hash each time.
 */
const ACCESS_BY_PATTERN: ReadonlyMap<string, ReadonlyMap<string, AccessClass>> = HTTP_ROUTES.reduce((byPattern, definition) => {
  const methods = byPattern.get(definition.url) ?? new Map<string, AccessClass>();
  byPattern.set(definition.url, methods.set(definition.method, definition.access));
  return byPattern;
}, new Map<string, Map<string, AccessClass>>());

/** The access class of a route (HEAD routes share their GET's), or undefined when it has none. */
export function accessOf(method: string, routePattern: string): AccessClass | undefined {
  return ACCESS_BY_PATTERN.get(routePattern)?.get(method === 'HEAD' ? 'GET' : method);
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
