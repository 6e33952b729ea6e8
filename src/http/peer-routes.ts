import type { FastifyInstance } from 'fastify';
import { RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';
import { installPeerCompression } from './peer-compression.js';
import { peerMethods, type PeerMethod } from '../transport/transport.js';
import { Type } from 'typebox';
import { responses } from './openapi/schemas.js';
import { serve, type RouteGroup } from './route-definition.js';

/** The peer API: peer credentials only, open while this peer syncs (others must reach it then). */
export const PEER_ROUTES = {
  call: {
    method: 'POST',
    url: '/v1/peer/:method',
    access: 'peer',
    gatedUntilReady: false,
    doc: {
      summary: 'Peer API: replication, probes, anti-entropy, snapshots',
      description: 'How peers talk to each other (docs/replication.md); clients never need it.',
      tags: ['peer'],
      params: Type.Object({ method: Type.Union(peerMethods.map((method) => Type.Literal(method))) }),
      body: Type.Object({}, { description: "The method's request (docs/replication.md)." }),
      response: responses({ 200: Type.Object({}, { description: "The method's answer." }) }, [400, 404, 413]),
    },
  },
} satisfies RouteGroup;

/**
 * The peer API, `POST /v1/peer/{method}`: replication batches, membership probes,
 * anti-entropy exchanges and start-up snapshots. Its own plugin scope, so that peer
 * authentication can guard it apart from the client routes. Bodies may be large (an
 * exchange after a long partition), up to `limits.peerBodyMaxBytes`.
 */
export async function peerRoutes(app: FastifyInstance, options: { node: Pick<RegistryNode, 'peerApi' | 'config'> }): Promise<void> {
  const { node } = options;
  installPeerCompression(app, node.config.cluster.compressMinBytes, node.config.limits.peerBodyMaxBytes);
  serve(
    app,
    PEER_ROUTES.call,
    async (request) => {
      const method = (request.params as { method: string }).method;
      if (!(peerMethods as readonly string[]).includes(method)) {
        throw new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no peer method ${method}`);
      }
      return node.peerApi.handle(method as PeerMethod, request.body);
    },
    { bodyLimit: node.config.limits.peerBodyMaxBytes },
  );
}
