/**
 * The Protocols panel and the "registered through" filter (docs/dashboard.md): the shapes of
 * `GET /v1/dashboard/protocols` and `/v1/dashboard/registrations`, and the pure arithmetic the
 * page does on them (rates between two readings, the filter). No DOM here.
 */

export interface ListenerView {
  protocol: string;
  /** How the page names it (the peer sends it: a listener's declaration says). */
  label: string;
  on: boolean;
  address: string | null;
  transport: string;
}

export interface ProtocolLoadView {
  protocol: string;
  requests: number;
  refused: number;
  refusedAtCap: number;
  held: number;
  byOutcome: Record<string, number>;
}

export interface ProtocolsView {
  nowMs: number;
  listeners: ListenerView[];
  protocols: ProtocolLoadView[];
  /** The filter's choices: the protocols that register instances, in the order the page lists them. */
  registering: RegisteringProtocol[];
}

/** A protocol that registers instances, and how the page names it. */
export interface RegisteringProtocol {
  protocol: string;
  label: string;
}

export interface RegistrationsView {
  namespace: string;
  services: Array<{ service: string; protocols: Record<string, number> }>;
  instances?: Array<{ instanceId: string; protocol: string }>;
}

/**
 * How a protocol is named on the page: as the peer names it (its entry among the registering
 * protocols, or its listener's label), else its own name. The page holds no table of
 * protocols: a new one shows with the label its declaration gives.
 */
export function protocolLabel(protocol: string, view: Pick<ProtocolsView, 'listeners' | 'registering'> | null): string {
  return view?.registering.find((entry) => entry.protocol === protocol)?.label ?? view?.listeners.find((listener) => listener.protocol === protocol)?.label ?? protocol;
}

/** One row of the panel: the listener and the load, with rates per second since the previous reading. */
export interface ProtocolRow {
  protocol: string;
  listener: ListenerView | null;
  held: number;
  requests: number;
  refused: number;
  refusedAtCap: number;
  /** Null on the first reading (no previous one to compare with). */
  requestsPerSecond: number | null;
  refusedPerSecond: number | null;
}

/**
 * The panel's rows from a reading and the previous one: rates are the counts' growth over the
 * time between the two (0 when a peer restarted and its counts went back). Listeners first in
 * the peer's order, then any protocol that has load but no listener.
 */
export function protocolRows(current: ProtocolsView, previous: ProtocolsView | null): ProtocolRow[] {
  const elapsedS = previous ? (current.nowMs - previous.nowMs) / 1000 : 0;
  const before = new Map((previous?.protocols ?? []).map((load) => [load.protocol, load]));
  const rate = (now: number, then: number | undefined): number | null => {
    if (then === undefined || elapsedS <= 0) return null;
    return Math.max(0, now - then) / elapsedS;
  };
  const loads = new Map(current.protocols.map((load) => [load.protocol, load]));
  const names = [...current.listeners.map((listener) => listener.protocol), ...current.protocols.map((load) => load.protocol)];
  return [...new Set(names)].map((protocol) => {
    const load = loads.get(protocol);
    const then = before.get(protocol);
    return {
      protocol,
      listener: current.listeners.find((listener) => listener.protocol === protocol) ?? null,
      held: load?.held ?? 0,
      requests: load?.requests ?? 0,
      refused: load?.refused ?? 0,
      refusedAtCap: load?.refusedAtCap ?? 0,
      requestsPerSecond: rate(load?.requests ?? 0, then?.requests),
      refusedPerSecond: rate(load?.refused ?? 0, then?.refused),
    };
  });
}

/** A rate as the panel shows it: `-` before the second reading, one decimal under 10/s. */
export function rateText(perSecond: number | null): string {
  if (perSecond === null) return '-';
  if (perSecond === 0) return '0';
  return perSecond < 10 ? perSecond.toFixed(1) : Math.round(perSecond).toLocaleString('en');
}

/** Per service (lower-cased, as the registry matches names), its counts by protocol. */
export function registrationsByService(view: RegistrationsView): Map<string, Record<string, number>> {
  return new Map(view.services.map((entry) => [entry.service.toLowerCase(), entry.protocols]));
}

/** Whether a service has instances registered through `protocol` ('' = any: every service passes). */
export function registeredThrough(counts: Map<string, Record<string, number>>, service: string, protocol: string): boolean {
  if (protocol === '') return true;
  return (counts.get(service.toLowerCase())?.[protocol] ?? 0) > 0;
}
