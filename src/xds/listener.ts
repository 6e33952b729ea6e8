import { setLogger } from '@grpc/grpc-js';
import type { ListenerDeps, ProtocolListener } from '../protocol-listeners.js';
import { XdsProtos } from './protos.js';
import { XdsServer } from './server.js';

/** The xDS listener as started: its server (tests read its port and figures). */
export interface XdsListener extends ProtocolListener {
  server: XdsServer;
}

/**
 * Starts the xDS Aggregated Discovery Service on `config.protocols.xds.port` on the peer's
 * host (TLS with the peer's certificate when it serves TLS); null when the port is not set.
 */
export async function startXdsListener(deps: ListenerDeps): Promise<XdsListener | null> {
  const settings = deps.config.protocols.xds;
  if (settings.port === null) return null;
  const logger = deps.logger.child({ component: 'xds' });
  // grpc-js writes its own errors to stderr; they go to the peer's log instead.
  setLogger({ error: (...args: unknown[]) => logger.warn({ grpc: args.map(String).join(' ') }, 'grpc') });
  const server = new XdsServer(
    { views: deps.node.views, clock: deps.node.components.clock, logger, protos: new XdsProtos() },
    {
      host: deps.config.host,
      port: settings.port,
      namespaces: settings.namespaces,
      lbPolicy: settings.lbPolicy,
      pushCoalesceMs: settings.pushCoalesceMs,
      ...(deps.tls ? { tls: { cert: deps.tls.cert, key: deps.tls.key } } : {}),
    },
  );
  await server.start();
  logger.info({ port: server.port, namespaces: settings.namespaces, lbPolicy: settings.lbPolicy, tls: deps.tls !== undefined }, 'xds: serving the Aggregated Discovery Service');
  return { name: 'xds', server, close: () => server.close() };
}
