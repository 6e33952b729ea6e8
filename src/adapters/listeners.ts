import { consulDeclaration } from '../consul/declaration.js';
import { dnsDeclaration } from '../dns/declaration.js';
import { nacosDeclaration } from '../nacos/declaration.js';
import { xdsDeclaration } from '../xds/declaration.js';
import type { SettingsOf } from './declaration.js';

/**
 * The protocols with a listener of their own, in the order they start: one line per protocol,
 * its declaration (src/<protocol>/declaration.ts). The config loader, the CLI, the peer's
 * start, the protocols view and the dashboard read this list and name no protocol; adding one
 * is its folder plus its line here (docs/architecture.md, "Adding a protocol").
 */
export const LISTENER_ADAPTERS = [dnsDeclaration, xdsDeclaration, consulDeclaration, nacosDeclaration] as const;

/** A listed protocol's declaration. */
export type ListedAdapter = (typeof LISTENER_ADAPTERS)[number];

/** The listed protocols' names (`dns`, `xds`, ...): their sections of the file. */
export type ListenerName = ListedAdapter['name'];

/** Each listed protocol's settings under its name, as `RegistryConfig.protocols` carries them. */
export type ProtocolConfigs = { [D in ListedAdapter as D['name']]: SettingsOf<D> };

/** The port flags of the listed protocols (`dnsPort`, ...), as commander names their options. */
export type ListenerPortFlags = { [N in ListenerName as `${N}Port`]?: string | number };

/** A listed protocol's settings in a configuration (read by its declaration). */
export function settingsOf<D extends ListedAdapter>(config: { protocols: ProtocolConfigs }, adapter: D): SettingsOf<D> {
  return config.protocols[adapter.name as D['name']] as SettingsOf<D>;
}
