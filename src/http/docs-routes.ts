import { readFileSync } from 'node:fs';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { attachRouteDocs } from './openapi/route-docs.js';

/** The package's version, for the description (package.json sits two levels up from src/http and dist/http). */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/**
 * Collects every route's documentation into an OpenAPI 3 description. Must be installed on
 * the root app before any route is added (it watches routes as they are added).
 */
export async function installOpenApi(app: FastifyInstance, eurekaPrefixes: readonly string[]): Promise<void> {
  attachRouteDocs(app);
  await registerOpenApi(app, {
    title: 'peer-registry',
    description:
      'A peer-to-peer, AP, Eureka-compatible service registry. Every peer serves this whole API. Requests are validated by the registry itself: errors are `{code, message}` bodies (docs/errors.md), and the message names the field at fault.',
    tags: [
      { name: 'instances', description: 'Register, heartbeat, change status, cancel (docs/api.md).' },
      { name: 'services', description: 'Reads, long polls and watch streams.' },
      { name: 'operations', description: 'Probes, the cluster view, metrics.' },
      { name: 'admin', description: "Operator switches, this peer's only." },
      { name: 'peer', description: 'How peers talk to each other (docs/replication.md).' },
      { name: 'dashboard', description: 'The web dashboard (docs/dashboard.md).' },
      ...eurekaPrefixes.map((prefix) => ({ name: `Eureka ${prefix}`, description: 'The Eureka-compatible API (docs/eureka.md).' })),
    ],
  });
}

/**
 * @fastify/swagger on `app`, as an OpenAPI 3.1 description with this package's version: for the
 * HTTP API and for a listener of its own (the Consul API's), each with its title and tags.
 */
export async function registerOpenApi(
  app: FastifyInstance,
  description: { title: string; description: string; tags: { name: string; description: string }[] },
): Promise<void> {
  const { title, tags } = description;
  await app.register(swagger, { openapi: { openapi: '3.1.0', info: { title, version: packageVersion(), description: description.description }, tags } });
}

/**
 * `GET /docs`: a browsable page of the OpenAPI description (Swagger UI, its assets served by
 * this peer from the npm package: it works offline), and the description itself at
 * `/docs/json` and `/docs/yaml`. Its own plugin scope, so the security layer can guard it.
 */
export async function docsRoutes(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // No call to the public validator service: the page must work offline.
    uiConfig: { validatorUrl: null, deepLinking: true, docExpansion: 'list' },
  });
}
