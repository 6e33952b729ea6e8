import type { ListenerConfig } from '../config/listener-settings.js';
import type { ListenerStarter } from '../protocol-listeners.js';
import type { InstanceData } from '../registry/types.js';
import type { AdapterDeclaration } from './contract.js';

/**
 * What a protocol with a listener of its own declares about itself, in one light file of its
 * folder (src/<protocol>/declaration.ts), so that the rest of the peer reads it instead of
 * naming the protocol: the config loader its section and port (src/config/protocols.ts,
 * resolve.ts), the configuration reference its rows (config/reference.ts), the CLI its flag
 * (cli/peer-options.ts), the peer how to start it and which ports it binds
 * (protocol-listeners.ts, peer.ts), the protocols view and the dashboard its row and label
 * (metrics/protocols-view.ts). The list of them is src/adapters/listeners.ts: adding a
 * protocol is its folder plus one line there (docs/architecture.md, "Adding a protocol").
 *
 * A declaration imports nothing that does I/O or pulls a framework in: the config loader reads
 * it in every process (CLI, tests, benchmarks). Its listener's code (grpc-js for xDS and
 * Nacos) is loaded only when the listener starts (`starter`).
 */

/** One row of the configuration reference (docs/configuration.md, "Protocol listeners"). */
export interface SettingRow {
  /** The field inside the section (`port`, `ttlSeconds`). */
  field: string;
  /** Its type or unit as the reference shows it (`port`, `ms`, `count`, `array`, `boolean`). */
  type: string;
  /** Its default as the reference shows it (Markdown). */
  default: string;
  /** What it does (Markdown, one line). */
  doc: string;
}

/** A port a started listener binds, for the "port in use" line of a failed start (startup-failure.ts). */
export interface ListenerPort {
  /** What listens there, e.g. `the Nacos gRPC listener`. */
  what: string;
  port: number;
}

/** A protocol with a listener of its own: its declaration, typed by its name and its settings. */
export interface ListenerDeclaration<Name extends string = string, Settings extends ListenerConfig = ListenerConfig> extends AdapterDeclaration {
  /** Its name: the folder under src/, its section of the file, its label in the metrics (`adapter`). */
  readonly name: Name;
  /** How the dashboard and the protocols view name it (`xDS (gRPC)`). */
  readonly label: string;
  /** How it carries its protocol, as the protocols view shows it (`UDP and TCP`). */
  readonly transport: string;
  /**
   * Its port's flag and environment variable (`--dns-port`, `REGISTRY_DNS_PORT`: names users rely on, never renamed);
   * the file's field is `<name>.port` and the flag's option `<name>Port`. `help` is the flag's
   * line in `--help` (the environment variable is added to it).
   */
  readonly settings: { readonly section: Name; readonly flag: `--${Name}-port`; readonly env: `REGISTRY_${Uppercase<Name>}_PORT`; readonly help: string };
  /**
   * Reads its section of the file (undefined when absent) with the port from the highest source
   * that has one; throws ProtocolConfigError (src/config/listener-settings.ts) naming the field.
   */
  readSettings(section: unknown, port: number | undefined): Settings;
  /** Its rows of docs/configuration.md, `port` and `namespaces` first; `intro` names what it serves in the section's first sentence. */
  readonly reference: { readonly intro: string; readonly rows: readonly SettingRow[] };
  /** The ports its listener binds with these settings (none when off): a port in use names the setting. */
  listens(settings: Settings): ListenerPort[];
  /** More words for the port setting in a failed start's message (Nacos's gRPC port), if any. */
  readonly portNote?: string;
  /**
   * Whether a record was registered through it, besides carrying its record extension
   * (`extension`, which the protocols view checks first): absent for most.
   */
  registered?(data: InstanceData): boolean;
  /**
   * Its metrics (docs/metrics.md): it records its requests, refusals and held slots as the
   * `registry_adapter_*` series with `adapter="<name>"`, and these families of its own besides.
   */
  readonly metrics: readonly string[];
  /** Loads its listener's starter (a dynamic import: its code is loaded only when it starts). */
  starter(): Promise<ListenerStarter>;
}

/** The settings type a declaration reads. */
export type SettingsOf<D> = D extends ListenerDeclaration<string, infer S> ? S : never;

/** The flag option (commander's camelCase: `dnsPort`) of a declaration's port. */
export function portOption(declaration: Pick<ListenerDeclaration, 'name'>): string {
  return `${declaration.name}Port`;
}

/** The port setting in a failed start's message: the flag, its environment variable and the file's field. */
export function portSettingOf(declaration: ListenerDeclaration): string {
  const { flag, env, section } = declaration.settings;
  return `${flag} (${env}, or \`${section}.port\` in the config file${declaration.portNote ? `; ${declaration.portNote}` : ''})`;
}
