import type { ListenerDeps, ProtocolListener } from '../protocol-listeners.js';
import type { XdsServer } from './server.js';

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
  // Loaded only when xDS is on: grpc-js, protobufjs and the protos are about 110 modules and
  // several MB of RSS that a peer without an xDS port would carry for nothing.
  const [{ setLogger }, { XdsProtos }, { XdsServer }] = await Promise.all([import('@grpc/grpc-js'), import('./protos.js'), import('./server.js')]);
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
