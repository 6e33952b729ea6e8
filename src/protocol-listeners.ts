import type { AdapterDeclaration, AdapterPorts } from './adapters/contract.js';
import type { RegistryConfig } from './config/load.js';
import type { ConsulNode } from './consul/app.js';
import { startConsulListener } from './consul/listener.js';
import { startDns } from './dns/listener.js';
import type { ServerTls } from './http/server.js';
import type { Logger } from './log/logger.js';
import { startNacosListener } from './nacos/listener.js';
import type { RegistryNode } from './node.js';
import { startXdsListener } from './xds/listener.js';

/**
 * What the listeners read of the peer, never the whole node: the read layer (DNS, xDS), the
 * membership (DNS zones, Consul's datacenters and `status/peers`), the clock (xDS pushes, the
 * Consul TTL sweep), and what the Consul API reads besides (ConsulNode: its application layer's
 * sources, the start-up sync's readiness, chance and the logger), and the adapter metrics. A
 * peer's RegistryNode is one.
 */
export type ListenerNode = ConsulNode & Pick<RegistryNode, 'ports' | 'adapterMetrics'>;

/** What a protocol listener (DNS, xDS, Consul) is started with. */
export interface ListenerDeps {
  node: ListenerNode;
  config: RegistryConfig;
  logger: Logger;
  /** The peer's certificate when it serves TLS. */
  tls?: ServerTls;
  /**
   * The adapter contract's ports (src/adapters/contract.ts), the peer's own (`node.ports`):
   * writes, reads, access, limits (the one rate limiter, the held-slot pools), the redacting
   * and sampling logger. What an adapter should use rather than the node.
   */
  ports: AdapterPorts;
}

/** What starting the listeners takes: the ports come with the node. */
export type ListenersInput = Omit<ListenerDeps, 'ports'>;

/** A started listener: stopped on shutdown, before the node. */
export interface ProtocolListener {
  name: string;
  close(): Promise<void>;
}

/** Starts one protocol's listener, or answers null when its port is not set (off). */
export type ListenerStarter = (deps: ListenerDeps) => Promise<ProtocolListener | null>;

/** A protocol with a listener of its own: its declaration (the adapter contract) and its starter. */
export interface ListenerAdapter extends AdapterDeclaration {
  start: ListenerStarter;
}

/**
 * The protocol listeners beside the HTTP API, each off by default (see config/protocols.ts).
 * One line per protocol: its declaration and its folder's starter (docs/architecture.md,
 * "Adding a protocol").
 */
export const LISTENER_ADAPTERS: readonly ListenerAdapter[] = [
  { name: 'dns', credentials: ['dns-source'], settings: { section: 'dns', flag: '--dns-port' }, docs: 'docs/dns.md', start: startDns },
  { name: 'xds', credentials: ['grpc-authorization'], settings: { section: 'xds', flag: '--xds-port' }, docs: 'docs/xds.md', start: startXdsListener },
  { name: 'consul', credentials: ['x-consul-token', 'bearer', 'query-token'], settings: { section: 'consul', flag: '--consul-port' }, docs: 'docs/consul.md', start: startConsulListener },
  { name: 'nacos', credentials: ['nacos-access-token', 'bearer'], settings: { section: 'nacos', flag: '--nacos-port' }, docs: 'docs/nacos.md', extension: 'nacos', start: startNacosListener },
];

/** Starts every configured listener; a failure stops the ones already started and is rethrown. */
export async function startProtocolListeners(input: ListenersInput): Promise<ProtocolListener[]> {
  const started: ProtocolListener[] = [];
  const deps: ListenerDeps = { ...input, ports: input.node.ports };
  try {
    for (const { start } of LISTENER_ADAPTERS) {
      const listener = await start(deps);
      if (listener) started.push(listener);
    }
  } catch (error) {
    await closeProtocolListeners(started);
    throw error;
  }
  return started;
}

/** Stops listeners, last started first; a failing close does not keep the others open. */
export async function closeProtocolListeners(listeners: readonly ProtocolListener[]): Promise<void> {
  for (const listener of [...listeners].reverse()) await listener.close().catch(() => {});
}
