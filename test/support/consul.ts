import type { FastifyInstance } from 'fastify';
import { buildConsulApp, type ConsulApp } from '../../src/consul/app.js';
import { buildServer } from '../../src/http/server.js';
import { createTestNode, type TestNode } from './node.js';

/** One peer on a fake clock with its Consul app and its native app, both driven with inject(). */
export interface TestConsul extends TestNode, ConsulApp {
  /** The native API of the same peer (/v1, Eureka). */
  native: FastifyInstance;
  close(): Promise<void>;
}

export async function createTestConsul(options: Parameters<typeof createTestNode>[0] = {}): Promise<TestConsul> {
  const base = await createTestNode(options);
  const consul = await buildConsulApp({ node: base.node, port: 8500 });
  const native = await buildServer({ node: base.node });
  return {
    ...base,
    ...consul,
    native,
    async close() {
      await consul.app.close();
      await native.close();
      await base.node.stop();
    },
  };
}
