import type { AdapterPorts } from './adapters/contract.js';
import { LISTENER_ADAPTERS } from './adapters/listeners.js';
import type { RegistryConfig } from './config/load.js';
import type { ServerTls } from './http/server.js';
import type { Logger } from './log/logger.js';
import type { NodeComponents, RegistryNode } from './node.js';

/**
 * What the listeners read of the peer, never the whole node: its application layer's sources
 * (registry, durability, the read layer, the watch hub, zones), the membership (DNS zones,
 * Consul's datacenters and `status/peers`), readiness (the start-up sync), the clock, chance
 * and the logger, the contract's ports and the adapter metrics. A peer's RegistryNode is one.
 */
export type ListenerNode = Pick<RegistryNode, 'registry' | 'durability' | 'views' | 'watch' | 'regionOfZone' | 'membership' | 'ready' | 'ports' | 'adapterMetrics'> & {
  readonly config: RegistryConfig;
  readonly components: Pick<NodeComponents, 'clock' | 'rng' | 'logger'>;
};

/** What a protocol listener is started with. */
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

/**
 * Starts every declared listener (src/adapters/listeners.ts) whose port is set, in the list's
 * order; a listener's code is loaded only when its port is set. A failure stops the ones
 * already started and is rethrown.
 */
export async function startProtocolListeners(input: ListenersInput): Promise<ProtocolListener[]> {
  const started: ProtocolListener[] = [];
  const deps: ListenerDeps = { ...input, ports: input.node.ports };
  try {
    for (const adapter of LISTENER_ADAPTERS) {
      if (input.config.protocols[adapter.name].port === null) continue;
      const start = await adapter.starter();
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
