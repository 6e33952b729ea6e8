import type { FastifyInstance } from 'fastify';
import { registerOpenApi } from '../http/docs-routes.js';
import { attachRouteDocs } from '../http/openapi/route-docs.js';
import { CONSUL_ROUTES, consulDefinitionOf } from './route-definitions.js';

/**
 * The Consul listener's OpenAPI 3 description, from its route definitions' docs: the subset of
 * Consul's HTTP API this registry serves, on this listener's port (its paths would collide
 * with the native API's `/v1` in the peer's own description, so it is a document of its own).
 * Consul clients never read it; it is there for people and tools checking what is served.
 * Must be installed before any route is added (it watches routes as they are added).
 */
export async function installConsulOpenApi(app: FastifyInstance): Promise<void> {
  attachRouteDocs(app, consulDefinitionOf);
  await registerOpenApi(app, {
    title: 'peer-registry: Consul-compatible API',
    description:
      'The part of the Consul HTTP API this registry serves (docs/consul.md). Errors are plain text with a status code, as Consul answers them. The token goes in `X-Consul-Token`, `Authorization: Bearer` or `?token=`.',
    tags: [
      { name: 'Consul agent', description: 'Registrations and TTL checks; the peer plays the agent.' },
      { name: 'Consul catalog and health', description: 'Reads, with blocking queries.' },
      { name: 'Consul status', description: 'What clients ask to tell whether the cluster works.' },
    ],
  });
}

/** `GET /docs/json`: the description itself (public: it holds no registry data), hidden from itself. */
export function consulOpenApiRoute(app: FastifyInstance): void {
  const { method, url } = CONSUL_ROUTES.openapi;
  app.route({ method, url, schema: { hide: true }, handler: async (_request, reply) => reply.type('application/json; charset=utf-8').send(JSON.stringify(app.swagger())) });
}
