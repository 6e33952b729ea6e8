import type { ListenerStarter } from '../protocol-listeners.js';
import { buildConsulApp } from './app.js';

/**
 * Starts the Consul API on `consul.port` of the peer's host (off when the port is null), with
 * the peer's certificate when it serves TLS, and the TTL sweep (`consul.ttlSweepIntervalMs`).
 */
export const startConsulListener: ListenerStarter = async ({ node, config, logger, tls }) => {
  const { port } = config.protocols.consul;
  if (port === null) return null;
  const { app, writes } = await buildConsulApp({ node, port, logger, ...(tls ? { tls } : {}) });
  await app.listen({ host: config.host, port });
  const sweep = node.components.clock.setInterval(() => writes.sweep(), config.protocols.consul.ttlSweepIntervalMs);
  logger.info({ component: 'consul', host: config.host, port }, 'Consul API listening');
  return {
    name: 'consul',
    async close() {
      sweep.cancel();
      await app.close();
    },
  };
};
