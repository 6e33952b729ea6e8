import type { FastifyInstance } from 'fastify';
import type { RegistryNode } from '../node.js';
import { EvictionGuards, GuardModes, responses } from './openapi/schemas.js';
import { serve, type RouteGroup } from './route-definition.js';

/** The operator routes: the admin scope, open before the start-up sync (an operator may need them then). */
export const ADMIN_ROUTES = {
  evictionGuards: {
    method: 'GET',
    url: '/v1/admin/eviction-guards',
    access: 'admin',
    gatedUntilReady: false,
    doc: { summary: 'State of the eviction guards', tags: ['admin'], response: { 200: EvictionGuards } },
  },
  setEvictionGuards: {
    method: 'PUT',
    url: '/v1/admin/eviction-guards',
    access: 'admin',
    gatedUntilReady: false,
    validateBody: true,
    doc: {
      summary: 'Switch self-preservation or the partition guard off, or back to auto',
      tags: ['admin'],
      body: GuardModes,
      response: responses({ 200: EvictionGuards }, [400, 415]),
    },
  },
} satisfies RouteGroup;

/**
 * Operator routes under `/v1/admin` (their own plugin scope, for the admin scope of the
 * security layer). Settings made here are this peer's only and last until it restarts.
 */
export async function adminRoutes(app: FastifyInstance, options: { node: Pick<RegistryNode, 'safety' | 'reaper' | 'components'> }): Promise<void> {
  const { node } = options;

  serve(app, ADMIN_ROUTES.evictionGuards, async () => node.safety.status(node.components.clock.nowMs()));

  serve(app, ADMIN_ROUTES.setEvictionGuards, async (request) => {
    // The body is checked by its schema (GuardModes) before this runs.
    const { selfPreservation, partitionGuard } = request.body;
    node.safety.setModes({ ...(selfPreservation ? { selfPreservation } : {}), ...(partitionGuard ? { partitionGuard } : {}) });
    // Decide again now, so the answer (and the next read) reflects the switch: a run in turns,
    // answered once its decisions are made.
    await node.reaper.runSoon();
    return node.safety.status(node.components.clock.nowMs());
  });
}
