import type { FastifyInstance, preValidationAsyncHookHandler, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import type { BodyValidator } from '../body-schema.js';
import { hookList } from '../hook-list.js';
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

/** Accepts any input: the domain validators (src/registry/validate.ts) judge it. */
const acceptAll = () => true;
/** What fastify does without a response schema: plain JSON.stringify, every field kept. */
const plainJson = () => (data: unknown) => JSON.stringify(data);

/**
 * Checks a request's body against a route's schema, as fastify's validation step would (after
 * the root's hooks, before the route's preHandlers), and refuses one that does not fit with the
 * error body-schema.ts picks. typebox's compiler is imported on the first body checked, not at
 * start: some 160 modules and 4 MB of RSS that a peer nobody sends a status change or an
 * eviction-guard change never needs (with typebox/compile, loaded at start, an idle peer went
 * from 111 to 117 MB).
 */
function bodyCheck(schema: TSchema): preValidationAsyncHookHandler {
  let validator: Promise<BodyValidator> | undefined;
  return async (request) => {
    validator ??= import('../body-schema.js').then(({ bodyValidator }) => bodyValidator(schema));
    const result = (await validator)(request.body);
    if (result !== true) throw result.error;
  };
}

/**
 * Attaches each route's documentation as its fastify schema, as the route is added, for
 * @fastify/swagger to describe. Fastify's own validator (ajv, coercing types, removing and
 * defaulting fields) never runs: a route whose definition says `validateBody` gets its body
 * checked by typebox's compiler with the messages its schema carries (bodyCheck above), and
 * fastify's validation step gets a validator that accepts everything for every part of every
 * route, the domain validators naming the field and its rule. And each route gets the plain JSON serializer: a
 * response schema would make fastify serialize through it and drop any field it does not list.
 * `lookup` is the listener's catalogue: the HTTP API's by default, the Consul listener's its own.
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
    if (body) route.preValidation = [...hookList(route.preValidation), bodyCheck(body)];
    route.validatorCompiler = () => acceptAll;
    route.serializerCompiler = plainJson;
  });
}
