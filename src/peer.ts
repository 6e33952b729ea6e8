import { randomInt } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { portSettingOf, type ListenerDeclaration } from './adapters/declaration.js';
import { LISTENER_ADAPTERS, settingsOf } from './adapters/listeners.js';
import { systemClock } from './clock/clock.js';
import { gatedClock, StallWatch } from './clock/stall-watch.js';
import { seededRng } from './clock/rng.js';
import { ConfigError, loadConfig, type ConfigFlags, type RegistryConfig } from './config/load.js';
import { buildServer, type ServerTls } from './http/server.js';
import { DataDirError } from './persistence/disk.js';
import { createPinoLogger } from './log/pino.js';
import { RegistryNode } from './node.js';
import { closeProtocolListeners, startProtocolListeners, type ProtocolListener } from './protocol-listeners.js';
import { decideStartup, startupFacts } from './security/startup-policy.js';
import { codeOf, isTlsError, listenFailure, otherFailure, tlsFailure, type ListenTarget } from './startup-failure.js';
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

/** The setting that chooses the HTTP port, for the messages of startup-failure.ts (a listener's is its declaration's). */
const HTTP_PORT_SETTING = '--port (REGISTRY_PORT, or `port` in the config file; a peer listed in the file takes its port from its `url`)';

/**
 * Ends a start that failed: the fatal log line (with the error's code and message, no stack
 * trace) for whoever reads the logs, then one `registry: ...` line on standard error, exit 2.
 */
function failStart(logger: ReturnType<typeof createPinoLogger> | null, line: string, msg: string, fields: Record<string, unknown> = {}): never {
  if (logger) {
    logger.fatal({ ...fields, problem: line }, msg);
    logger.flush();
  }
  process.stderr.write(`registry: ${line}\n`);
  process.exit(2);
}

/** An error for the fatal log line: what pino would show of it, minus the stack. */
const loggedError = (error: unknown) => ({ code: codeOf(error), message: error instanceof Error ? error.message : String(error) });

/** The protocol listener a listen error belongs to, by the port it names (null: none of them): each declares the ports it binds. */
export function protocolTarget(config: RegistryConfig, error: unknown): ListenTarget | null {
  const port = (error as { port?: unknown } | null)?.port;
  for (const adapter of LISTENER_ADAPTERS) {
    const declaration = adapter as ListenerDeclaration;
    for (const listening of declaration.listens(settingsOf(config, adapter))) {
      if (listening.port === port) return { what: listening.what, host: config.host, port: listening.port, portSetting: portSettingOf(declaration) };
    }
  }
  return null;
}

/**
 * Loads the configuration, starts one peer and its HTTP server, and shuts both down cleanly
 * on SIGTERM or SIGINT: stop accepting, finish in-flight requests, stop the node, flush the
 * logs, exit 0. Every failure to start (bad or unsafe configuration, a port in use or not
 * allowed, bad TLS files, an unusable data dir, a protocol listener) exits with code 2 after
 * one `registry: ...` line on standard error that names what to change (startup-failure.ts).
 */
export async function startPeer(flags: ConfigFlags, env: Record<string, string | undefined>): Promise<void> {
  let config;
  let tls;
  try {
    config = await loadConfig(env, flags);
    tls = await readTlsFiles(config);
  } catch (error) {
    if (error instanceof ConfigError) failStart(null, `bad configuration: ${error.message}`, 'bad configuration');
    failStart(null, otherFailure('reading the configuration', error), 'cannot start');
  }
  const { security } = config;
  const decision = decideStartup(startupFacts(config));
  if (!decision.start) failStart(null, decision.reason, 'unsafe configuration');
  const logger = createPinoLogger(config.logLevel);
  for (const warning of decision.warnings) logger.warn({ host: config.host }, warning);
  let transport: HttpTransport;
  let node: RegistryNode;
  let app: Awaited<ReturnType<typeof buildServer>>;
  try {
    transport = new HttpTransport({
      connectionsPerPeer: 4,
      connectTimeoutMs: config.cluster.peerCallTimeoutMs,
      selfRegion: config.self.region,
      compressMinBytes: config.cluster.compressMinBytes,
      selfId: config.self.id,
      clusterSecret: security.clusterSecret,
      tls: tls.peers,
    });
    // After a stall (the process stopped, paused or starved) the peer's own periodic work waits
    // for the connections queued meanwhile, and the peer calls abandoned meanwhile are skipped
    // (clock/stall-watch.ts).
    const stallWatch = new StallWatch({
      onStall: (stalledMs) => logger.warn({ stalledMs: Math.round(stalledMs) }, 'event loop stood still: peer calls whose caller gave up meanwhile are skipped'),
    });
    const backgroundClock = gatedClock(systemClock, stallWatch);
    node = new RegistryNode({ clock: systemClock, backgroundClock, rng: seededRng(randomInt(2 ** 31)), logger, transport }, config);
    app = await buildServer({ node, logger, processMetrics: true, stallWatch, ...(tls.server ? { tls: tls.server } : {}) });
  } catch (error) {
    // The HTTPS server reads the certificate and key when it is built.
    if (isTlsError(error)) failStart(logger, tlsFailure(error, config.tls), 'bad TLS files', { err: loggedError(error) });
    failStart(logger, otherFailure('building the server', error), 'cannot start', { err: loggedError(error) });
  }
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    const target = { what: 'the HTTP API', host: config.host, port: config.port, portSetting: HTTP_PORT_SETTING };
    failStart(logger, listenFailure(error, target), 'cannot listen', { err: loggedError(error), host: config.host, port: config.port });
  }
  // Listen first (so peers and probes reach us while we sync), then sync; /readyz says when done.
  try {
    await node.start();
  } catch (error) {
    if (error instanceof DataDirError) {
      failStart(logger, `cannot use the data dir ${error.message}`, 'cannot use the data dir', { dataDir: error.dataDir });
    }
    failStart(logger, otherFailure('the start-up sync', error), 'cannot start', { err: loggedError(error) });
  }
  // The protocol listeners (src/adapters/listeners.ts; each off unless its port is set), after the start-up sync.
  let listeners: ProtocolListener[];
  try {
    listeners = await startProtocolListeners({ node, config, logger, ...(tls.server ? { tls: tls.server } : {}) });
  } catch (error) {
    const target = protocolTarget(config, error);
    const line = target ? listenFailure(error, target) : otherFailure('starting a protocol listener', error);
    failStart(logger, line, 'cannot start a protocol listener', { err: loggedError(error) });
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
      // What the process runs with (src/node-flags.ts lists what `npm start` and the image pass).
      nodeFlags: process.execArgv.join(' '),
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
