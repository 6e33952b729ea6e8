import type { FastifyInstance } from 'fastify';
import type { RegistryNode } from '../node.js';
import { parseSelection } from './selection.js';
import { encodeTargetGroups, joinTargetGroups, TARGET_GROUPS_ENCODING } from './target-groups.js';

/**
 * `GET /v1/sd/prometheus`: Prometheus HTTP service discovery (docs/prometheus.md). Each
 * service's target groups come from the read layer, encoded once per change of its view and
 * shared by every scraper; a request only selects and joins them. It is a native read route:
 * the access policy gives it the `read` scope on its namespace, and the readiness gate answers
 * 503 until the start-up sync is done (Prometheus then keeps its last targets and retries).
 */
export async function prometheusSdRoutes(app: FastifyInstance, options: { node: RegistryNode }): Promise<void> {
  const { views } = options.node;
  app.get('/v1/sd/prometheus', (request, reply) => {
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
