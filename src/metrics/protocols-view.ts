import type { RegistryConfig } from '../config/load.js';
import type { InstanceData } from '../registry/types.js';
import type { ServiceViews } from '../views/service-views.js';
import type { WatchHub } from '../watch/hub.js';
import { outcomes, type AdapterMetrics, type Outcome } from './adapter-metrics.js';

/**
 * What the dashboard's "Protocols" panel and its "registered through" filter show
 * (docs/dashboard.md): the listeners, each protocol's load, and which protocol registered each
 * instance. Built from what the peer keeps anyway: the configuration, the adapters' metrics,
 * and the services' stable views (the counts are kept per view and rebuilt only when what is
 * served changes, so a poll of a quiet registry costs one lookup per service).
 */

/**
 * Which protocol registered an instance, from its record's protocol data, first match wins;
 * any other instance was registered through the native API. One line per protocol.
 */
export const REGISTERED_THROUGH: ReadonlyArray<readonly [protocol: string, registered: (data: InstanceData) => boolean]> = [
  ['nacos', (data) => data.extensions?.nacos !== undefined],
  ['consul', (data) => data.extensions?.consul !== undefined || hasConsulMarker(data.metadata)],
  ['eureka', (data) => data.extensions?.eureka !== undefined],
];
export const NATIVE = 'native';

/** The Consul API keeps its tags and checks in metadata keys under `consul.` (consul/fields.ts). */
function hasConsulMarker(metadata: Readonly<Record<string, string>>): boolean {
  for (const key in metadata) if (key.startsWith('consul.')) return true;
  return false;
}

/** The protocol that registered an instance (`native` when none of the table's matches). */
export function registeredThrough(data: InstanceData): string {
  for (const [protocol, registered] of REGISTERED_THROUGH) if (registered(data)) return protocol;
  return NATIVE;
}

/** How the listeners of the peer carry their protocol, for the panel. */
const LISTENER_TRANSPORTS: Readonly<Record<string, string>> = { dns: 'UDP and TCP', xds: 'gRPC', consul: 'HTTP', nacos: 'HTTP, gRPC and UDP' };

export interface ListenerEntry {
  protocol: string;
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
}

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
    { protocol: 'native', on: true, address: `${url}/v1`, transport: 'HTTP' },
    { protocol: 'eureka', on: true, address: `${url}/eureka`, transport: 'HTTP' },
    { protocol: 'prometheus', on: true, address: `${url}/v1/sd/prometheus`, transport: 'HTTP' },
  ];
  for (const [protocol, listener] of Object.entries(config.protocols) as Array<[string, { port: number | null }]>) {
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    listeners.push({ protocol, on: listener.port !== null, address: listener.port === null ? null : `${host}:${listener.port}`, transport: LISTENER_TRANSPORTS[protocol] ?? 'TCP' });
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
  return { nowMs: sources.clock.nowMs(), listeners, protocols: [...loads.values()] };
}

/** Per service, how many of its served instances each protocol registered. */
export interface ServiceRegistrations {
  service: string;
  protocols: Record<string, number>;
}

/** What a view's instances were registered through: kept with the view (one pass per change). */
interface ViewRegistrations {
  protocols: Record<string, number>;
  byInstance: Array<{ instanceId: string; protocol: string }>;
}

const ENCODING = 'dashboard-registered-through';

function registrationsOf(views: ServiceViews, namespace: string, service: string): ViewRegistrations & { service: string } {
  // The stable view: kept until what is served changes, so a quiet registry is counted once.
  const view = views.stable(namespace, service);
  const counted = views.stableEncoding(view, ENCODING, (built): ViewRegistrations => {
    const protocols: Record<string, number> = {};
    const byInstance = built.served.map((entry) => {
      const protocol = registeredThrough(entry.record.data);
      protocols[protocol] = (protocols[protocol] ?? 0) + 1;
      return { instanceId: entry.record.instanceId, protocol };
    });
    return { protocols, byInstance };
  });
  return { service: view.service, ...counted };
}

/** The body of `GET /v1/dashboard/registrations`: every service's counts, and the instances of one service when asked. */
export function registrationsView(
  views: ServiceViews,
  namespace: string,
  service: string | null,
): { namespace: string; services: ServiceRegistrations[]; instances?: Array<{ instanceId: string; protocol: string }> } {
  const services = views.servicesOf(namespace).map((name) => {
    const { service: shown, protocols } = registrationsOf(views, namespace, name);
    return { service: shown, protocols };
  });
  return { namespace, services, ...(service === null ? {} : { instances: registrationsOf(views, namespace, service).byInstance }) };
}
