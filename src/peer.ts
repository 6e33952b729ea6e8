import { randomInt } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { systemClock } from './clock/clock.js';
import { seededRng } from './clock/rng.js';
import { ConfigError, loadConfig, type ConfigFlags, type RegistryConfig } from './config/load.js';
import { buildServer, type ServerTls } from './http/server.js';
import { DataDirError } from './persistence/disk.js';
import { createPinoLogger } from './log/pino.js';
import { RegistryNode } from './node.js';
import { closeProtocolListeners, startProtocolListeners, type ProtocolListener } from './protocol-listeners.js';
import { decideStartup, startupFacts } from './security/startup-policy.js';
import { HttpTransport } from './transport/http-transport.js';

/** How long a clean shutdown may take before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

/** The certificate files of `tls`, read; a file that cannot be read is a configuration error. */
async function readTlsFiles(config: RegistryConfig): Promise<{ server?: ServerTls; peers: { ca?: Buffer; cert?: Buffer; key?: Buffer } }> {
  const read = async (field: string, path: string | null): Promise<Buffer | undefined> => {
    if (path === null) return undefined;
    try {
      return await readFile(path);
    } catch (error) {
      throw new ConfigError(field, `cannot read ${path}: ${(error as Error).message}`);
    }
  };
  const cert = await read('tls.certFile', config.tls.certFile);
  const key = await read('tls.keyFile', config.tls.keyFile);
  const ca = await read('tls.caFile', config.tls.caFile);
  const mtls = config.security.peerMtls;
  return {
    ...(cert && key ? { server: { cert, key, ...(mtls && ca ? { clientCa: ca } : {}) } } : {}),
    peers: { ...(ca ? { ca } : {}), ...(mtls && cert && key ? { cert, key } : {}) },
  };
}

/**
 * Loads the configuration, starts one peer and its HTTP server, and shuts both down cleanly
 * on SIGTERM or SIGINT: stop accepting, finish in-flight requests, stop the node, flush the
 * logs, exit 0. A bad configuration exits with code 2 and names the field; so does an
 * unsafe one (a non-loopback address without authentication, see startup-policy.ts).
 */
export async function startPeer(flags: ConfigFlags, env: Record<string, string | undefined>): Promise<void> {
  let config;
  let tls;
  try {
    config = await loadConfig(env, flags);
    tls = await readTlsFiles(config);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`registry: bad configuration: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const { security } = config;
  const decision = decideStartup(startupFacts(config));
  if (!decision.start) {
    process.stderr.write(`registry: ${decision.reason}\n`);
    process.exit(2);
  }
  const logger = createPinoLogger(config.logLevel);
  for (const warning of decision.warnings) logger.warn({ host: config.host }, warning);
  const transport = new HttpTransport({
    connectionsPerPeer: 4,
    connectTimeoutMs: config.cluster.peerCallTimeoutMs,
    selfRegion: config.self.region,
    compressMinBytes: config.cluster.compressMinBytes,
    selfId: config.self.id,
    clusterSecret: security.clusterSecret,
    tls: tls.peers,
  });
  const node = new RegistryNode({ clock: systemClock, rng: seededRng(randomInt(2 ** 31)), logger, transport }, config);
  const app = await buildServer({ node, logger, processMetrics: true, ...(tls.server ? { tls: tls.server } : {}) });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    logger.fatal({ err: error, host: config.host, port: config.port }, 'cannot listen');
    logger.flush();
    process.exit(2);
  }
  // Listen first (so peers and probes reach us while we sync), then sync; /readyz says when done.
  try {
    await node.start();
  } catch (error) {
    if (error instanceof DataDirError) {
      logger.fatal({ dataDir: error.dataDir, problem: error.message }, 'cannot use the data dir');
      logger.flush();
      process.stderr.write(`registry: cannot use the data dir ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // DNS, xDS and Consul listeners (each off unless its port is set), after the start-up sync.
  let listeners: ProtocolListener[];
  try {
    listeners = await startProtocolListeners({ node, config, logger, ...(tls.server ? { tls: tls.server } : {}) });
  } catch (error) {
    logger.fatal({ err: error }, 'cannot start a protocol listener');
    logger.flush();
    process.stderr.write(`registry: cannot start a protocol listener: ${(error as Error).message}\n`);
    process.exit(2);
  }
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
    await closeProtocolListeners(listeners);
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
