import type { FastifyInstance } from 'fastify';
import type { RegistryReads } from '../app/reads.js';
import { PrometheusSdQuery, responses, TargetGroups } from '../http/openapi/schemas.js';
import { serve, type RouteGroup } from '../http/route-definition.js';
import { parseSelection } from './selection.js';
import { sendChunks } from '../http/send-chunks.js';
import { gatherRuns } from './shared-groups.js';
import { answerPieces } from './target-groups.js';

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
 * service's target groups come from the read layer, encoded once per change of its stable
 * view and shared by every scraper (shared-groups.ts); a request only selects them and sends
 * the selected pieces as they are: a big answer (100,000 instances are 50 MB) is streamed from
 * the shared buffers at the process's shared pace, never joined into one buffer per scraper
 * (src/http/send-chunks.ts). It is a native read route: the access policy gives it the `read`
 * scope on its namespace, and the readiness gate answers 503 until the start-up sync is done
 * (Prometheus then keeps its last targets and retries).
 */
export async function prometheusSdRoutes(app: FastifyInstance, options: { reads: Pick<RegistryReads, 'views' | 'regionOfZone'> }): Promise<void> {
  const { reads } = options;
  const { views } = reads;
  const regionOfZone = (zone: string) => reads.regionOfZone(zone);
  serve(app, PROMETHEUS_ROUTES.targets, async (request, reply) => {
    const selection = parseSelection(request.query as Record<string, unknown>);
    // Taken before gathering (which may yield): the answer holds at least every change up to it.
    const index = views.revision;
    const names = selection.services ?? views.servicesOf(selection.namespace);
    const runs = await gatherRuns(views, regionOfZone, selection.namespace, names, selection);
    reply.header('X-Registry-Index', String(index));
    // Prometheus accepts exactly application/json, with or without charset=utf-8.
    return sendChunks(reply, answerPieces(runs), 'application/json; charset=utf-8');
  });
}
