import { eurekaRouteDefinitions } from '../eureka/route-definitions.js';
import { PROMETHEUS_ROUTES } from '../prometheus/routes.js';
import { ADMIN_ROUTES } from './admin-routes.js';
import { CLIENT_ROUTES, WATCH_ROUTES } from '../native/route-definitions.js';
import { METRICS_ROUTES } from './metrics-routes.js';
import { DOCS_ROUTES } from './openapi/page-routes.js';
import { OPS_ROUTES } from './ops-routes.js';
import { PEER_ROUTES } from './peer-routes.js';
import { definitionLookup, type RouteDefinition } from './route-definition.js';
import { UI_ROUTES } from './ui-routes.js';

/**
 * Every route of the HTTP API, as registered (the Eureka routes under each prefix). The access
 * policy, the readiness gate and the OpenAPI description are read from here, so a route
 * declared in its group is covered by all three; a route added without a definition is
 * refused by the access guard (and a unit test fails).
 */
export const HTTP_ROUTES: readonly RouteDefinition[] = [
  ...Object.values(OPS_ROUTES),
  ...Object.values(ADMIN_ROUTES),
  ...Object.values(CLIENT_ROUTES),
  ...Object.values(WATCH_ROUTES),
  ...Object.values(PROMETHEUS_ROUTES),
  ...Object.values(PEER_ROUTES),
  ...eurekaRouteDefinitions(),
  ...Object.values(METRICS_ROUTES),
  ...Object.values(UI_ROUTES),
  ...DOCS_ROUTES,
];

/** The definition of a route by method and pattern (HEAD routes share their GET's), or undefined. */
export const definitionOf: (method: string, url: string) => RouteDefinition | undefined = definitionLookup(HTTP_ROUTES);
