import type { RegistryConfig } from './config/load.js';
import type { ConsulNode } from './consul/app.js';
import { startConsulListener } from './consul/listener.js';
import { startDns } from './dns/listener.js';
import type { ServerTls } from './http/server.js';
import type { Logger } from './log/logger.js';
import { startNacosListener } from './nacos/listener.js';
import { startXdsListener } from './xds/listener.js';

/**
 * What the listeners read of the peer, never the whole node: the read layer (DNS, xDS), the
 * membership (DNS zones, Consul's datacenters and `status/peers`), the clock (xDS pushes, the
 * Consul TTL sweep), and what the Consul API reads besides (ConsulNode: its application layer's
 * sources, the start-up sync's readiness, chance and the logger). A peer's RegistryNode is one.
 */
export type ListenerNode = ConsulNode;

/** What a protocol listener (DNS, xDS, Consul) is started with. */
export interface ListenerDeps {
  node: ListenerNode;
  config: RegistryConfig;
  logger: Logger;
  /** The peer's certificate when it serves TLS. */
  tls?: ServerTls;
}

/** A started listener: stopped on shutdown, before the node. */
export interface ProtocolListener {
  name: string;
  close(): Promise<void>;
}

/** Starts one protocol's listener, or answers null when its port is not set (off). */
export type ListenerStarter = (deps: ListenerDeps) => Promise<ProtocolListener | null>;

/**
 * The protocol listeners beside the HTTP API, each off by default (see config/protocols.ts).
 * One line per protocol: its folder's starter.
 */
const starters: ListenerStarter[] = [startDns, startXdsListener, startConsulListener, startNacosListener];

/** Starts every configured listener; a failure stops the ones already started and is rethrown. */
export async function startProtocolListeners(deps: ListenerDeps): Promise<ProtocolListener[]> {
  const started: ProtocolListener[] = [];
  try {
    for (const start of starters) {
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
