import type { FastifyInstance } from 'fastify';
import { RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';
import { ClusterView, Probe, responses } from './openapi/schemas.js';
import { serve, type RouteGroup } from './route-definition.js';

/** The probes, open to anyone and answering before the start-up sync; the cluster view, for operators. */
export const OPS_ROUTES = {
  healthz: {
    method: 'GET',
    url: '/healthz',
    access: 'public',
    gatedUntilReady: false,
    doc: { summary: 'Liveness: the process runs', tags: ['operations'], response: { 200: Probe } },
  },
  readyz: {
    method: 'GET',
    url: '/readyz',
    access: 'public',
    gatedUntilReady: false,
    doc: { summary: 'Readiness: the start-up sync is done', tags: ['operations'], response: responses({ 200: Probe }, [503]) },
  },
  // The cluster view spans every namespace (counts, peers, replication): operators only.
  cluster: {
    method: 'GET',
    url: '/v1/cluster',
    access: 'admin',
    gatedUntilReady: false,
    doc: { summary: "This peer's view of the cluster", tags: ['operations'], response: { 200: ClusterView } },
  },
} satisfies RouteGroup;

/** Liveness and readiness probes, and this peer's view of the cluster. */
export async function opsRoutes(app: FastifyInstance, options: { node: Pick<RegistryNode, 'ready' | 'status' | 'config'> }): Promise<void> {
  const { node } = options;

  serve(app, OPS_ROUTES.healthz, async () => ({ status: 'ok', peer: node.config.self.id }));

  serve(app, OPS_ROUTES.readyz, async (_request, reply) => {
    if (!node.ready) {
      const error = new RegistryError('REG_ERR_NOT_READY', 'the peer is still syncing with the cluster');
      return reply.code(error.status).send(error.toJSON());
    }
    return { status: 'ready', peer: node.config.self.id };
  });

  serve(app, OPS_ROUTES.cluster, async () => node.status());
}
