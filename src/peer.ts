import { systemClock } from './clock/clock.js';
import { seededRng } from './clock/rng.js';
import { randomInt } from 'node:crypto';
import { ConfigError, loadConfig, type ConfigFlags } from './config/load.js';
import { buildServer } from './http/server.js';
import { createPinoLogger } from './log/pino.js';
import { RegistryNode } from './node.js';
import { HttpTransport } from './transport/http-transport.js';

/** How long a clean shutdown may take before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Loads the configuration, starts one peer and its HTTP server, and shuts both down cleanly
 * on SIGTERM or SIGINT: stop accepting, finish in-flight requests, stop the node, flush the
 * logs, exit 0. A bad configuration exits with code 2 and names the field.
 */
export async function startPeer(flags: ConfigFlags, env: Record<string, string | undefined>): Promise<void> {
  let config;
  try {
    config = await loadConfig(env, flags);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`registry: bad configuration: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createPinoLogger(config.logLevel);
  const transport = new HttpTransport({ connectionsPerPeer: 4, connectTimeoutMs: config.cluster.peerCallTimeoutMs });
  const node = new RegistryNode({ clock: systemClock, rng: seededRng(randomInt(2 ** 31)), logger, transport }, config);
  const app = await buildServer({ node, logger, processMetrics: true });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    logger.fatal({ err: error, host: config.host, port: config.port }, 'cannot listen');
    logger.flush();
    process.exit(2);
  }
  // Listen first (so peers and probes reach us while we sync), then sync; /readyz says when done.
  await node.start();
  const address = app.server.address();
  logger.info(
    {
      peer: config.self.id,
      url: config.self.url,
      address:
        typeof address === 'object' && address !== null
          ? `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
          : address,
      profile: config.profile,
      seeds: config.seeds.length,
    },
    'registry peer started',
  );

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      logger.flush();
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    await app.close();
    await node.stop();
    await transport.close();
    logger.info('stopped');
    logger.flush();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
