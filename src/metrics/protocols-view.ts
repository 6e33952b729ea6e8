import type { ListenerDeclaration } from '../adapters/declaration.js';
import { LISTENER_ADAPTERS, settingsOf } from '../adapters/listeners.js';
import type { RegistryConfig } from '../config/load.js';
import type { InstanceData } from '../registry/types.js';
import type { WatchHub } from '../watch/hub.js';
import { outcomes, type AdapterMetrics, type Outcome } from './adapter-metrics.js';

/**
 * What the dashboard's "Protocols" panel and its "registered through" filter show
 * (docs/dashboard.md): the listeners, each protocol's load, and which protocol registered each
 * instance. Built from what the peer keeps anyway: the configuration, the adapters' metrics,
 * and the services' stable views (the counts are kept per view and rebuilt only when what is
 * served changes, so a poll of a quiet registry costs one lookup per service).
 */

/** The listeners' declarations, as the base type (each reads its own settings type). */
const DECLARED = LISTENER_ADAPTERS as readonly ListenerDeclaration[];

/**
 * Which protocol registered an instance, from its record's protocol data, first match wins:
 * the record extension of a listener that declares one (its declaration's `extension`), then
 * Eureka's (served by the HTTP app), then what a listener recognises besides (its declaration's
 * `registered`: Consul's metadata keys of records written before its extension). Any other
 * instance was registered through the native API.
 */
export const REGISTERED_THROUGH: ReadonlyArray<readonly [protocol: string, registered: (data: InstanceData) => boolean]> = [
  ...DECLARED.flatMap(({ name, extension }) => (extension ? [[name, (data: InstanceData) => data.extensions?.[extension as keyof NonNullable<InstanceData['extensions']>] !== undefined] as const] : [])),
  ['eureka', (data) => data.extensions?.eureka !== undefined],
  ...DECLARED.flatMap(({ name, registered }) => (registered ? [[name, registered] as const] : [])),
];
export const NATIVE = 'native';

/** The protocol that registered an instance (`native` when none of the table's matches). */
export function registeredThrough(data: InstanceData): string {
  for (const [protocol, registered] of REGISTERED_THROUGH) if (registered(data)) return protocol;
  return NATIVE;
}

export interface ListenerEntry {
  protocol: string;
  /** How the dashboard names it (a listener's declaration says; `Native /v1` for the main port's). */
  label: string;
  on: boolean;
  /** `host:port` or the URL it is reached at; null when off. */
  address: string | null;
  transport: string;
}

export interface ProtocolLoad {
  protocol: string;
  /** Requests answered since the peer started (the page turns two readings into a rate). */
  requests: number;
  /** Requests refused since start: answered `limited` (a rate or a cap), `unauthenticated` or `forbidden`. */
  refused: number;
  /** Slots (streams, long polls, connections...) refused at the peer's cap or a principal's share, since start. */
  refusedAtCap: number;
  /** Clients held now: streams, long polls, blocking queries, connections, subscribers. */
  held: number;
  byOutcome: Record<Outcome, number>;
}

/** The body of `GET /v1/dashboard/protocols`. */
export interface ProtocolsView {
  nowMs: number;
  listeners: ListenerEntry[];
  protocols: ProtocolLoad[];
  /** The protocols that register instances (the dashboard's "registered through" choices), as REGISTERED_THROUGH orders them, the native API last. */
  registering: Array<{ protocol: string; label: string }>;
}

/** How the dashboard names each registering protocol: Eureka's and the native API's here, a listener's from its declaration. */
const REGISTERING: ReadonlyArray<{ protocol: string; label: string }> = [
  { protocol: 'eureka', label: 'Eureka' },
  ...DECLARED.filter((adapter) => adapter.extension !== undefined || adapter.registered !== undefined).map((adapter) => ({ protocol: adapter.name, label: adapter.label })),
  { protocol: NATIVE, label: 'the native API' },
];

export interface ProtocolsSources {
  readonly config: Pick<RegistryConfig, 'host' | 'self' | 'protocols'>;
  readonly adapterMetrics: AdapterMetrics;
  readonly watch: Pick<WatchHub, 'stats'>;
  readonly clock: { nowMs(): number };
}

/** The listeners (the main port's protocols, then each configured listener) and each protocol's load. */
export function protocolsView(sources: ProtocolsSources): ProtocolsView {
  const { config } = sources;
  const url = config.self.url;
  const listeners: ListenerEntry[] = [
    { protocol: 'native', label: 'Native /v1', on: true, address: `${url}/v1`, transport: 'HTTP' },
    { protocol: 'eureka', label: 'Eureka', on: true, address: `${url}/eureka`, transport: 'HTTP' },
    { protocol: 'prometheus', label: 'Prometheus SD', on: true, address: `${url}/v1/sd/prometheus`, transport: 'HTTP' },
  ];
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  for (const adapter of LISTENER_ADAPTERS) {
    const { port } = settingsOf(config, adapter);
    listeners.push({ protocol: adapter.name, label: adapter.label, on: port !== null, address: port === null ? null : `${host}:${port}`, transport: adapter.transport });
  }
  const loads = new Map<string, ProtocolLoad>();
  const empty = (protocol: string): ProtocolLoad => ({
    protocol,
    requests: 0,
    refused: 0,
    refusedAtCap: 0,
    held: 0,
    byOutcome: Object.fromEntries(outcomes.map((outcome) => [outcome, 0])) as Record<Outcome, number>,
  });
  for (const listener of listeners) loads.set(listener.protocol, empty(listener.protocol));
  for (const adapter of sources.adapterMetrics.all()) loads.set(adapter.adapter, { protocol: adapter.adapter, ...adapter.totals() });
  // The native watch streams and long polls, while the native adapter declares no pool of its own.
  const native = loads.get(NATIVE)!;
  if (![...sources.adapterMetrics.all()].some((adapter) => adapter.adapter === NATIVE && adapter.pools.size > 0)) {
    const stats = sources.watch.stats();
    native.held += stats.subscribers + stats.longPolls;
  }
  return { nowMs: sources.clock.nowMs(), listeners, protocols: [...loads.values()], registering: [...REGISTERING] };
}
