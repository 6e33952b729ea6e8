import type { RouteDefinition } from '../route-definition.js';

/**
 * The API description's own routes, added (and hidden from the description) by
 * @fastify/swagger-ui: declared here for the access policy. Static files with no registry
 * data, which a browser loads without a bearer token: public.
 */
export const DOCS_ROUTES: RouteDefinition[] = ['/docs', '/docs/json', '/docs/yaml', '/docs/static/index.html', '/docs/static/swagger-initializer.js', '/docs/static/*'].map(
  (url) => ({ method: 'GET', url, access: 'public', gatedUntilReady: false }),
);
