import type { ListenerDeps, ProtocolListener } from '../protocol-listeners.js';
import { isLoopback } from '../security/startup-policy.js';
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
  // The contract's logger: redacted, and a client's flood of NACKs or refusals sampled.
  const logger = deps.ports.logger.child({ component: 'xds' });
  // grpc-js writes its own errors to stderr; they go to the peer's log instead.
  setLogger({ error: (...args: unknown[]) => logger.warn({ grpc: args.map(String).join(' ') }, 'grpc') });
  const server = new XdsServer(
    { views: deps.ports.reads.views, clock: deps.node.components.clock, logger, protos: new XdsProtos(), ports: deps.ports, regionOfZone: (zone) => deps.ports.reads.regionOfZone(zone) },
    {
      host: deps.config.host,
      port: settings.port,
      namespaces: settings.namespaces,
      lbPolicy: settings.lbPolicy,
      pushCoalesceMs: settings.pushCoalesceMs,
      allowAnonymous: settings.allowAnonymous,
      streamsMax: settings.streamsMax,
      resourceNamesPerPrincipalMax: settings.resourceNamesPerPrincipalMax,
      ...(deps.tls ? { tls: { cert: deps.tls.cert, key: deps.tls.key } } : {}),
    },
  );
  await server.start();
  const anonymous = server.access.servesAnonymous;
  logger.info({ port: server.port, namespaces: settings.namespaces, lbPolicy: settings.lbPolicy, tls: deps.tls !== undefined, anonymous, framedSend: server.framedSend }, 'xds: serving the Aggregated Discovery Service');
  const warning = openXdsWarning(deps.config.host, server.port, settings.namespaces, anonymous, deps.config.security.tokens.length > 0);
  if (warning) logger.warn({ port: server.port, namespaces: settings.namespaces }, warning);
  return { name: 'xds', server, close: () => server.close() };
}

/**
 * The start-up warning of an xDS port that serves streams without a token on an address other
 * machines reach: anyone who reaches it reads every instance address of those namespaces
 * (other tenants' included). Null on loopback, or when every stream needs a token. Pure.
 */
export function openXdsWarning(host: string, port: number, namespaces: readonly string[], anonymous: boolean, tokens: boolean): string | null {
  if (!anonymous || isLoopback(host)) return null;
  const why = tokens ? 'xds.allowAnonymous is on' : 'no client token is configured';
  return (
    `xds: port ${port} on ${host} serves the instances of namespaces ${namespaces.join(', ')} to any client without a token (${why}); ` +
    'limit xds.namespaces to what every client may read, or turn xds.allowAnonymous off so that streams need a read token'
  );
}
