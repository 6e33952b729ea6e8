/**
 * The settings of the protocol listeners beside the HTTP API (DNS, xDS, Consul), each off by
 * default and on when its port is given (`--dns-port`, `dns.port` in the file, ...). Each
 * protocol's section of the file is read here, so that a bad value stops the peer at start
 * with exit code 2 like every other setting; the adapters (src/dns, src/xds, src/consul) own
 * what the values mean.
 */

/** What every protocol listener has: its port (null: off) and the namespaces it serves. */
export interface ListenerConfig {
  /** TCP (and for DNS also UDP) port on the peer's host; null leaves the listener off. */
  port: number | null;
  /** Namespaces this protocol exposes (it carries no credentials of its own, or maps them). */
  namespaces: string[];
}

export type DnsConfig = ListenerConfig;

/** How gRPC clients balance over a service's endpoints (the Cluster's lb_policy; docs/xds.md). */
export const xdsLbPolicies = ['ring_hash', 'round_robin'] as const;
export type XdsLbPolicy = (typeof xdsLbPolicies)[number];

export interface XdsConfig extends ListenerConfig {
  /**
   * `ring_hash` (default): each endpoint gets calls in proportion to its weight (gRPC clients
   * pick a random point of the ring per call when the route names no hash); `round_robin`:
   * endpoints of a locality take turns, weights then only split calls between localities.
   */
  lbPolicy: XdsLbPolicy;
  /**
   * Milliseconds: changes within this window reach each ADS stream as one push per resource
   * type, so a burst of registrations is one update. Longer: fewer pushes under churn, later news.
   */
  pushCoalesceMs: number;
}
export type ConsulConfig = ListenerConfig;

/** The three listeners' settings together, as `RegistryConfig` carries them. */
export interface ProtocolConfigs {
  dns: DnsConfig;
  xds: XdsConfig;
  consul: ConsulConfig;
}

/** A problem with one field; load.ts turns it into its ConfigError. */
export class ProtocolConfigError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

type Json = Record<string, unknown>;

const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

function sectionOf(name: string, value: unknown): Json {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ProtocolConfigError(name, 'must be an object');
  return value as Json;
}

function rejectUnknown(section: Json, known: readonly string[], name: string): void {
  for (const field of Object.keys(section)) {
    if (!known.includes(field)) throw new ProtocolConfigError(`${name}.${field}`, `is not a known setting (known: ${known.join(', ')})`);
  }
}

/** `namespaces`: a non-empty array of namespace names; `['default']` when absent. */
export function readNamespaces(field: string, value: unknown): string[] {
  if (value === undefined) return ['default'];
  if (!Array.isArray(value) || value.length === 0 || !value.every((item) => typeof item === 'string' && NAMESPACE.test(item))) {
    throw new ProtocolConfigError(field, 'must be a non-empty array of namespace names, for example ["default"]');
  }
  return [...new Set(value as string[])];
}

/**
 * One listener's section. `port` is the value from the highest source that has it (flag,
 * environment or file), already read as a port number by load.ts, or undefined.
 */
function readListener(name: string, doc: unknown, port: number | undefined, extra: readonly string[] = []): { section: Json; config: ListenerConfig } {
  const section = sectionOf(name, doc);
  rejectUnknown(section, ['port', 'namespaces', ...extra], name);
  return { section, config: { port: port ?? null, namespaces: readNamespaces(`${name}.namespaces`, section.namespaces) } };
}

/** Default of `xds.pushCoalesceMs`: the watch streams' default window. */
export const XDS_PUSH_COALESCE_MS = 50;
const XDS_PUSH_COALESCE_MAX_MS = 10_000;

function readXds(doc: unknown, port: number | undefined): XdsConfig {
  const { section, config } = readListener('xds', doc, port, ['lbPolicy', 'pushCoalesceMs']);
  const { lbPolicy = 'ring_hash', pushCoalesceMs = XDS_PUSH_COALESCE_MS } = section;
  if (typeof lbPolicy !== 'string' || !(xdsLbPolicies as readonly string[]).includes(lbPolicy)) {
    throw new ProtocolConfigError('xds.lbPolicy', `must be one of ${xdsLbPolicies.join(', ')}`);
  }
  if (typeof pushCoalesceMs !== 'number' || !Number.isInteger(pushCoalesceMs) || pushCoalesceMs < 0 || pushCoalesceMs > XDS_PUSH_COALESCE_MAX_MS) {
    throw new ProtocolConfigError('xds.pushCoalesceMs', `must be an integer number of milliseconds from 0 to ${XDS_PUSH_COALESCE_MAX_MS}`);
  }
  return { ...config, lbPolicy: lbPolicy as XdsLbPolicy, pushCoalesceMs };
}

/** The `dns`, `xds` and `consul` sections of the file, with their ports from flags, environment or file. */
export function readProtocols(doc: Json, ports: { dns: number | undefined; xds: number | undefined; consul: number | undefined }): ProtocolConfigs {
  return {
    dns: readListener('dns', doc.dns, ports.dns).config,
    xds: readXds(doc.xds, ports.xds),
    consul: readListener('consul', doc.consul, ports.consul).config,
  };
}
