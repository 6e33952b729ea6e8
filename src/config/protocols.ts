/**
 * The settings of the protocol listeners beside the HTTP API, each off by default and on when
 * its port is given (`--dns-port`, `dns.port` in the file, ...). Each protocol declares its
 * section in its own folder (src/<protocol>/declaration.ts); this reads every declared section,
 * so that a bad value stops the peer at start with exit code 2 like every other setting.
 */
import { LISTENER_ADAPTERS, type ListedAdapter, type ProtocolConfigs } from '../adapters/listeners.js';
import type { ListenerConfig } from './listener-settings.js';

export { ProtocolConfigError, readNamespaces, type ListenerConfig } from './listener-settings.js';
export type { ProtocolConfigs } from '../adapters/listeners.js';

/** Every declared protocol's section of the file, each with its port from flag, environment or file (`portOf`). */
export function readProtocols(doc: Record<string, unknown>, portOf: (adapter: ListedAdapter) => number | undefined): ProtocolConfigs {
  const out: Record<string, ListenerConfig> = {};
  for (const adapter of LISTENER_ADAPTERS) out[adapter.name] = adapter.readSettings(doc[adapter.name], portOf(adapter));
  return out as unknown as ProtocolConfigs;
}
