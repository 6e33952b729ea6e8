import type { FastifyInstance } from 'fastify';
import type { RegistryReads } from '../app/reads.js';
import { PrometheusSdQuery, responses, TargetGroups } from '../http/openapi/schemas.js';
import { serve, type RouteGroup } from '../http/route-definition.js';
import { parseSelection } from './selection.js';
import { encodeTargetGroups, joinTargetGroups, TARGET_GROUPS_ENCODING } from './target-groups.js';

/** Prometheus HTTP service discovery: a read of the namespace, like a listing. */
export const PROMETHEUS_ROUTES = {
  targets: {
    method: 'GET',
    url: '/v1/sd/prometheus',
    access: 'read',
    gatedUntilReady: true,
    doc: {
      summary: 'Prometheus HTTP service discovery: target groups of the UP instances',
      description:
        'The JSON list `http_sd_configs` reads: one group `{targets: ["host:port"], labels}` per UP instance with a live lease, with `__meta_registry_*` labels (docs/prometheus.md).',
      tags: ['services'],
      querystring: PrometheusSdQuery,
      response: responses({ 200: TargetGroups }, [400, 429]),
    },
  },
} satisfies RouteGroup;

/**
 * `GET /v1/sd/prometheus`: Prometheus HTTP service discovery (docs/prometheus.md). Each
 * service's target groups come from the read layer, encoded once per change of its view and
 * shared by every scraper; a request only selects and joins them. It is a native read route:
 * the access policy gives it the `read` scope on its namespace, and the readiness gate answers
 * 503 until the start-up sync is done (Prometheus then keeps its last targets and retries).
 */
export async function prometheusSdRoutes(app: FastifyInstance, options: { reads: Pick<RegistryReads, 'views'> }): Promise<void> {
  const { views } = options.reads;
  serve(app, PROMETHEUS_ROUTES.targets, (request, reply) => {
    const selection = parseSelection(request.query as Record<string, unknown>);
    const services = (selection.services ?? views.servicesOf(selection.namespace)).map((service) =>
      views.encoded(selection.namespace, service, TARGET_GROUPS_ENCODING, encodeTargetGroups),
    );
    reply.header('X-Registry-Index', String(views.revision));
    // Prometheus accepts exactly application/json, with or without charset=utf-8.
    reply.type('application/json; charset=utf-8');
    return joinTargetGroups(services, selection);
  });
}
