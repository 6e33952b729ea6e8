import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifyInstance,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
  preParsingHookHandler,
  preValidationHookHandler,
} from 'fastify';
import type { TSchema } from 'typebox';

/**
 * Who may call a route:
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

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What the OpenAPI description says about one route: fastify's schema keywords, a summary and tags. */
export type RouteDoc = FastifySchema & { summary: string; description?: string; tags: string[] };

/**
 * A route, declared once: everything the server derives from it (the access policy, the
 * readiness gate, the OpenAPI description, request validation) reads this, and the route is
 * registered from it (`serve`), so its method and path are written nowhere else.
 */
export interface RouteDefinition {
  method: HttpMethod;
  /** The path as fastify registers it (`/v1/services/:service`), within its plugin's prefix. */
  url: string;
  access: AccessClass;
  /**
   * Answers 503 `REG_ERR_NOT_READY` until the start-up sync is done: true for the routes that
   * read or write the registry for clients (an incomplete registry would miss instances, and
   * a heartbeat would get a 404 for an instance registered elsewhere); false for probes, the
   * peer API (others must reach us while we sync), the cluster view, operator routes and
   * static files.
   */
  gatedUntilReady: boolean;
  /** Absent only for the routes a plugin adds and hides itself (the API description's own page). */
  doc?: RouteDoc;
  /**
   * The request's body is checked against `doc.body` before the handler runs (after the access
   * guard's namespace check), a body that does not fit is answered 400 as the hand validators
   * would (src/schema/body-schema.ts maps the schema's findings to `{code, message}`), and the
   * handler's `request.body` is typed by the schema (`serve`). Off: the schema only documents the body.
   */
  validateBody?: boolean;
}

/** The definitions of one route group, by a name for each route. */
export type RouteGroup = Record<string, RouteDefinition>;

/** The key fastify's routes are known by here: `METHOD pattern`. */
export function routeKey(method: string, url: string): string {
  return `${method} ${url}`;
}

/**
 * A lookup of definitions by method and pattern (HEAD routes share their GET's), for a
 * listener's access check, readiness gate and route docs; undefined for a route with none.
 */
export function definitionLookup(definitions: readonly RouteDefinition[]): (method: string, url: string) => RouteDefinition | undefined {
  const byKey = new Map(definitions.map((definition) => [routeKey(definition.method, definition.url), definition]));
  return (method, url) => byKey.get(routeKey(method === 'HEAD' ? 'GET' : method, url));
}

/** A group's definitions under a prefix (a plugin registered with `{ prefix }` adds it to every url). */
export function underPrefix(prefix: string, group: RouteGroup, tags: string[]): RouteDefinition[] {
  return Object.values(group).map((definition) => ({
    ...definition,
    url: `${prefix}${definition.url}`,
    ...(definition.doc ? { doc: { ...definition.doc, tags } } : {}),
  }));
}

/** The part of a definition's schema its handler may rely on: the body, when the definition validates it. */
type CheckedSchema<D extends RouteDefinition> = D extends { validateBody: true; doc: { body: infer Body extends TSchema } } ? { body: Body } : FastifySchema;

/**
 * A definition's handler: `request.body` typed by the definition's schema (through the typebox
 * type provider) when the definition validates it, `unknown` otherwise. Path and query stay
 * untyped: no schema checks them (their parsers in the routes do).
 */
type Handler<D extends RouteDefinition> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  CheckedSchema<D>,
  TypeBoxTypeProvider
>;

/**
 * What only a running server knows of a route: a body limit; where its body comes from (a
 * shortcut may have read it: http/front-door.ts); a check of the raw body before it is validated.
 */
export interface ServeOptions {
  bodyLimit?: number;
  preParsing?: preParsingHookHandler;
  preValidation?: preValidationHookHandler;
}

/**
 * Registers a route from its definition; `options` holds what only a running server knows. The schema itself is attached by the `onRoute` hook (openapi/route-docs.ts),
 * from the same definition, for every route alike.
 */
export function serve<D extends RouteDefinition>(app: FastifyInstance, definition: D, handler: Handler<D>, options: ServeOptions = {}): void {
  app.withTypeProvider<TypeBoxTypeProvider>().route<RouteGenericInterface, ContextConfigDefault, CheckedSchema<D>>({ method: definition.method, url: definition.url, handler, ...options });
}
