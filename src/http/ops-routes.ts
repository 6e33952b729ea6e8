import type { FastifyInstance } from 'fastify';
import { RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';

/** Liveness and readiness probes, and this peer's view of the cluster. */
export async function opsRoutes(app: FastifyInstance, options: { node: RegistryNode }): Promise<void> {
  const { node } = options;

  app.get('/healthz', async () => ({ status: 'ok', peer: node.config.self.id }));

  app.get('/readyz', async (_request, reply) => {
    if (!node.ready) {
      const error = new RegistryError('REG_ERR_NOT_READY', 'the peer is still syncing with the cluster');
      return reply.code(error.status).send(error.toJSON());
    }
    return { status: 'ready', peer: node.config.self.id };
  });

  app.get('/v1/cluster', async () => node.status());
}
