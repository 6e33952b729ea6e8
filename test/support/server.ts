import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/http/server.js';
import { createTestNode, type TestNode } from './node.js';

export interface TestServer extends TestNode {
  app: FastifyInstance;
}

/** A started peer on a fake clock and its HTTP app, for `app.inject()`. */
export async function createTestServer(options: Parameters<typeof createTestNode>[0] = {}): Promise<TestServer> {
  const testNode = await createTestNode(options);
  const app = await buildServer({ node: testNode.node });
  await app.ready();
  return { ...testNode, app };
}
