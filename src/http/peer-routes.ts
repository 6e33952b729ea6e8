import type { FastifyInstance } from 'fastify';
import { RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';
import { installPeerCompression } from './peer-compression.js';
import { peerMethods, type PeerMethod } from '../transport/transport.js';

/**
 * The peer API, `POST /v1/peer/{method}`: replication batches, membership probes,
 * anti-entropy exchanges and start-up snapshots. Its own plugin scope, so that peer
 * authentication can guard it apart from the client routes. Bodies may be large (an
 * exchange after a long partition), up to `limits.peerBodyMaxBytes`.
 */
export async function peerRoutes(app: FastifyInstance, options: { node: RegistryNode }): Promise<void> {
  const { node } = options;
  installPeerCompression(app, node.config.cluster.compressMinBytes, node.config.limits.peerBodyMaxBytes);
  app.post('/v1/peer/:method', { bodyLimit: node.config.limits.peerBodyMaxBytes }, async (request) => {
    const method = (request.params as { method: string }).method;
    if (!(peerMethods as readonly string[]).includes(method)) {
      throw new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no peer method ${method}`);
    }
    return node.peerApi.handle(method as PeerMethod, request.body);
  });
}
