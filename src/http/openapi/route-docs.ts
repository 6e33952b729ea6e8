import type { FastifyInstance, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import { bodyValidator } from '../../schema/body-schema.js';
import { definitionOf } from '../route-catalogue.js';
import type { RouteDefinition, RouteDoc } from '../route-definition.js';

export type { RouteDoc } from '../route-definition.js';

/**
 * The documentation of a route, from its definition (route-catalogue.ts), or undefined when it
 * has none. A test fails when a route has none, so the OpenAPI description at /docs/json
 * always covers the whole API.
 */
export function routeDocFor(method: string, url: string): RouteDoc | undefined {
  return definitionOf(method, url)?.doc;
}

/** Accepts any input: path and query parameters are judged by the routes' parsers (src/registry/validate.ts). */
const acceptAll = () => true;
/** What fastify does without a response schema: plain JSON.stringify, every field kept. */
const plainJson = () => (data: unknown) => JSON.stringify(data);

/**
 * Attaches each route's documentation as its fastify schema, as the route is added, for
 * @fastify/swagger to describe. Fastify's own validator (ajv, coercing types, removing and
 * defaulting fields) never runs: a route whose definition says `validateBody` gets its body
 * checked by typebox's compiler with the messages its schema carries (body-schema.ts); every
 * other part, and every other route, gets a validator that accepts everything, the domain
 * validators naming the field and its rule. And each route gets the plain JSON serializer: a
 * response schema would make fastify serialize through it and drop any field it does not list.
 */
export function attachRouteDocs(
  app: FastifyInstance,
  lookup: (method: string, url: string) => RouteDefinition | undefined = definitionOf,
): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.schema?.hide) return;
    const methods = [route.method].flat();
    const definition = methods.map((method) => lookup(method, route.url)).find((found) => found?.doc);
    const doc = definition?.doc;
    if (!doc) return;
    route.schema = { ...doc, ...route.schema };
    const body = definition.validateBody ? (doc.body as TSchema | undefined) : undefined;
    route.validatorCompiler = ({ httpPart }) => (httpPart === 'body' && body ? bodyValidator(body) : acceptAll);
    route.serializerCompiler = plainJson;
  });
}
