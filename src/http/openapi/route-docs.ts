import type { FastifyInstance, RouteOptions } from 'fastify';
import { definitionOf } from '../route-catalogue.js';
import type { RouteDoc } from '../route-definition.js';

export type { RouteDoc } from '../route-definition.js';

/**
 * The documentation of a route, from its definition (route-catalogue.ts), or undefined when it
 * has none. A test fails when a route has none, so the OpenAPI description at /docs/json
 * always covers the whole API.
 */
export function routeDocFor(method: string, url: string): RouteDoc | undefined {
  return definitionOf(method, url)?.doc;
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
export function attachRouteDocs(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.schema?.hide) return;
    const methods = [route.method].flat();
    const doc = methods.map((method) => routeDocFor(method, route.url)).find(Boolean);
    if (!doc) return;
    route.schema = { ...doc, ...route.schema };
    route.validatorCompiler = acceptAll;
    route.serializerCompiler = plainJson;
  });
}
