/**
 * The settings of the protocol listeners beside the HTTP API (DNS, xDS, Consul), each off by
 * default and on when its port is given (`--dns-port`, `dns.port` in the file, ...). Each
 * protocol's section of the file is read here, so that a bad value stops the peer at start
 * with exit code 2 like every other setting; the adapters (src/dns, src/xds, src/consul) own
 * what the values mean.
 */
import { isIP } from 'node:net';

/** What every protocol listener has: its port (null: off) and the namespaces it serves. */
export interface ListenerConfig {
  /** TCP (and for DNS also UDP) port on the peer's host; null leaves the listener off. */
  port: number | null;
  /** Namespaces this protocol exposes (it carries no credentials of its own, or maps them). */
  namespaces: string[];
}

/** The DNS listener's settings (docs/dns.md): what it answers, for how long, and to whom. */
export interface DnsConfig extends ListenerConfig {
  /**
   * The zone the peer answers for, lower-case, ending with a dot (default `registry.`). Names
   * outside it answer REFUSED: the peer is no recursive resolver.
   */
  domain: string;
  /**
   * TTL of every record and of negative answers (the SOA's minimum), in seconds. Short (5 s)
   * because the registry changes fast: a resolver then holds a cancelled instance at most this
   * long; longer TTLs save queries at the cost of staler answers.
   */
  ttlSeconds: number;
  /**
   * Source networks (CIDR) allowed to query: DNS carries no credentials, so this and
   * `namespaces` are its access control. Default loopback only (127.0.0.0/8, ::1/128).
   */
  allowFrom: string[];
  /**
   * Largest UDP answer sent to a client that announces a larger EDNS0 buffer (512 to 65535
   * bytes, default 1232, the DNS flag day 2020 size that avoids IP fragmentation). Bigger
   * answers are truncated (TC) and the resolver retries over TCP.
   */
  maxUdpPayloadBytes: number;
  /**
   * UDP queries per second one source address may send, a token bucket `udpRateLimitBurst`
   * deep; 0 switches it off. A UDP source can be spoofed and an answer is up to 25 times the
   * query's size, so past it a query is dropped (every other one answered with an empty
   * truncated answer, so a resolver whose address a flood spoofs still gets through over TCP).
   * Loopback sources are not counted (a spoofed loopback source never arrives from the
   * network). Every query, UDP or TCP, also counts against the peer-wide `limits.rateLimit*`.
   * Sized far above what a caching resolver sends: it stops the peer from being an amplifier,
   * not a resolver.
   */
  udpRateLimitPerSecond: number;
  /** UDP queries one source may send at once before `udpRateLimitPerSecond` paces it. */
  udpRateLimitBurst: number;
}

/** The DNS defaults beside port and namespaces. */
export const DNS_DEFAULTS = {
  domain: 'registry.',
  ttlSeconds: 5,
  allowFrom: ['127.0.0.0/8', '::1/128'],
  maxUdpPayloadBytes: 1232,
  udpRateLimitPerSecond: 2_000,
  udpRateLimitBurst: 4_000,
} as const;
/** Most queries per second (and burst) a DNS rate setting takes. */
const DNS_RATE_MAX = 1_000_000;
/** The Consul API's settings beyond port and namespaces (docs/consul.md). */
export interface ConsulConfig extends ListenerConfig {
  /**
   * The `wait` of a blocking query that gives none, in ms. Consul's default is 5 minutes; a
   * shorter one costs one more round trip per watcher and period, a longer one holds a socket.
   */
  defaultWaitMs: number;
  /** Longest `wait` a blocking query may ask for, in ms (Consul's cap: 10 minutes); longer asks are cut to it. */
  maxWaitMs: number;
  /**
   * Most blocking queries this listener holds at once; the next one is answered 429. Each costs
   * a socket and about 2 KB (bench/consul.ts measures it).
   */
  blockingQueriesMax: number;
  /**
   * How often the TTL checks of the instances this peer owns are looked at, in ms: a check not
   * renewed within its TTL turns critical at most this much later.
   */
  ttlSweepIntervalMs: number;
  /**
   * Whether deregister and check pass/warn/fail also take GET, as Consul did before 1.0 and
   * Debian's python3-consul 0.7 still sends. Off (Consul's own rule since 1.0): a GET is
   * answered 405, so that a page in a browser cannot deregister or fail instances through a
   * link or an image. On, a GET that a browser made (it carries `Origin`, `Sec-Fetch-Site`
   * other than `none`, or `Referer`) is still refused.
   */
  allowGetWrites: boolean;
}

/** Defaults of the Consul settings beyond port and namespaces. */
export const CONSUL_DEFAULTS = { defaultWaitMs: 300_000, maxWaitMs: 600_000, blockingQueriesMax: 10_000, ttlSweepIntervalMs: 1_000, allowGetWrites: false } as const;

/** The numeric Consul settings (each with its bounds below). */
type ConsulNumber = Exclude<keyof typeof CONSUL_DEFAULTS, 'allowGetWrites'>;

/** Bounds of each Consul setting (inclusive). */
const CONSUL_BOUNDS: Record<ConsulNumber, [number, number]> = {
  defaultWaitMs: [1_000, 3_600_000],
  maxWaitMs: [1_000, 3_600_000],
  blockingQueriesMax: [1, 1_000_000],
  ttlSweepIntervalMs: [100, 60_000],
};

/** How gRPC clients balance over a service's endpoints (the Cluster's lb_policy; docs/xds.md). */
export const xdsLbPolicies = ['ring_hash', 'round_robin'] as const;
export type XdsLbPolicy = (typeof xdsLbPolicies)[number];
/** `xds.lbPolicy`: a policy forced on every client, or `auto` (each client one it can run). */
export const xdsLbPolicySettings = ['auto', ...xdsLbPolicies] as const;
export type XdsLbPolicySetting = (typeof xdsLbPolicySettings)[number];

export interface XdsConfig extends ListenerConfig {
  /**
   * `auto` (default): `ring_hash` (each endpoint gets calls in proportion to its weight) for
   * every client but those known to crash on it (gRPC C-core before 1.52, grpc/grpc#31766),
   * which get `round_robin` (localities weighted by their endpoints' weights). `ring_hash` or
   * `round_robin`: that policy for every client, whatever it is (src/xds/client-policy.ts).
   */
  lbPolicy: XdsLbPolicySetting;
  /**
   * Milliseconds: changes within this window reach each ADS stream as one push per resource
   * type, so a burst of registrations is one update. Longer: fewer pushes under churn, later news.
   */
  pushCoalesceMs: number;
  /**
   * With client tokens configured: serve `namespaces` to a stream that presents no token (most
   * gRPC xDS clients cannot send one to their control plane). A stream with an invalid token is
   * refused all the same. Off (default): with tokens, a stream needs a valid read token.
   */
  allowAnonymous: boolean;
  /**
   * Most ADS streams the listener holds at once; the next is refused (RESOURCE_EXHAUSTED). One
   * principal (a token, or an address without one) holds at most its share of them
   * (`limits.heldSharePerPrincipalRatio`), so one client holding all it may leaves room for others.
   */
  streamsMax: number;
  /**
   * Most resource names one principal's streams may subscribe to together (each stream holds
   * at most 10,000): every name costs memory for as long as the stream lives and work on
   * every push, so one client cannot make the peer hold millions.
   */
  resourceNamesPerPrincipalMax: number;
}

/** The Nacos naming API's settings beyond port and namespaces (docs/nacos.md). */
export interface NacosConfig extends ListenerConfig {
  /**
   * The Nacos 2.x gRPC port. Null: `port` + 1000, where Nacos clients look for it (9848 beside
   * 8848); set it only for clients told of another offset. Off when `port` is null.
   */
  grpcPort: number | null;
  /**
   * Most UDP push targets (v1 clients that list with `udpPort`) held at once, and most gRPC
   * connections: the caps of two held-slot pools of the peer (the adapter contract's limits
   * port), each with a share per principal (`limits.heldSharePerPrincipalRatio`).
   */
  pushTargetsMax: number;
  /**
   * Most instances and subscriptions per gRPC connection (the name is from when it also capped
   * push targets and connections per source address: those are per-principal shares now).
   */
  pushTargetsPerSourceMax: number;
  /**
   * How long a UDP push target lives after its client last listed the service, in ms. Nacos
   * clients list again every `cacheMillis` (10 s): a client that stops listing stops being
   * pushed to after this long.
   */
  pushSubscriptionTtlMs: number;
  /** How long a push waits for its `push-ack` before it is sent again, in ms. */
  pushRetryIntervalMs: number;
  /** How many times a push is sent again without an ack before it is given up (the client's next list catches up). */
  pushRetriesMax: number;
}

/** Defaults of the Nacos settings beyond port, namespaces and grpcPort. */
export const NACOS_DEFAULTS = {
  pushTargetsMax: 10_000,
  pushTargetsPerSourceMax: 256,
  pushSubscriptionTtlMs: 30_000,
  pushRetryIntervalMs: 1_000,
  pushRetriesMax: 3,
} as const;

/** Bounds of each Nacos setting (inclusive). */
const NACOS_BOUNDS: Record<keyof typeof NACOS_DEFAULTS, [number, number]> = {
  pushTargetsMax: [1, 1_000_000],
  pushTargetsPerSourceMax: [1, 100_000],
  pushSubscriptionTtlMs: [1_000, 3_600_000],
  pushRetryIntervalMs: [10, 60_000],
  pushRetriesMax: [0, 100],
};

/** How far above the HTTP port Nacos clients look for the gRPC port. */
export const NACOS_GRPC_PORT_OFFSET = 1_000;

/** Defaults of the xDS settings beyond port and namespaces. */
export const XDS_DEFAULTS = {
  lbPolicy: 'auto',
  allowAnonymous: false,
  streamsMax: 10_000,
  resourceNamesPerPrincipalMax: 100_000,
} as const;

/** The listeners' settings together, as `RegistryConfig` carries them. */
export interface ProtocolConfigs {
  dns: DnsConfig;
  xds: XdsConfig;
  consul: ConsulConfig;
  nacos: NacosConfig;
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

const DNS_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
const MAX_TTL_SECONDS = 86_400;

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

/** `dns.domain`: one or more DNS labels, compared lower-cased; stored with its trailing dot. */
function readDomain(value: unknown): string {
  if (value === undefined) return DNS_DEFAULTS.domain;
  const domain = typeof value === 'string' ? value.toLowerCase().replace(/\.$/, '') : '';
  if (domain === '' || domain.length > 200 || !domain.split('.').every((label) => DNS_LABEL.test(label))) {
    throw new ProtocolConfigError('dns.domain', `must be a DNS name such as "registry." or "svc.example.com." (got ${JSON.stringify(value)})`);
  }
  return `${domain}.`;
}

function readInteger(field: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ProtocolConfigError(field, `must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
  }
  return value;
}

/** `dns.allowFrom`: CIDR blocks (`10.0.0.0/8`, `::1/128`) or single addresses (taken as /32 or /128). */
function readNetworks(value: unknown): string[] {
  if (value === undefined) return [...DNS_DEFAULTS.allowFrom];
  const bad = () => new ProtocolConfigError('dns.allowFrom', `must be an array of networks such as ["127.0.0.0/8", "10.0.0.0/8", "::1/128"] (got ${JSON.stringify(value)})`);
  if (!Array.isArray(value)) throw bad();
  return value.map((item: unknown) => {
    if (typeof item !== 'string') throw bad();
    const [address = '', prefix, extra] = item.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? (family === 6 ? 128 : 32) : /^\d{1,3}$/.test(prefix) ? Number(prefix) : -1;
    if (family === 0 || extra !== undefined || bits < 0 || bits > (family === 6 ? 128 : 32)) throw bad();
    return `${address}/${bits}`;
  });
}

/** The `dns` section: the common fields plus the DNS ones; two namespaces may not differ only in case (DNS names do not). */
function readDns(doc: unknown, port: number | undefined): DnsConfig {
  const { section, config } = readListener('dns', doc, port, ['domain', 'ttlSeconds', 'allowFrom', 'maxUdpPayloadBytes', 'udpRateLimitPerSecond', 'udpRateLimitBurst']);
  const lowered = new Set(config.namespaces.map((namespace) => namespace.toLowerCase()));
  if (lowered.size !== config.namespaces.length) throw new ProtocolConfigError('dns.namespaces', 'must not hold two namespaces that differ only in case (DNS names are case-insensitive)');
  return {
    ...config,
    domain: readDomain(section.domain),
    ttlSeconds: readInteger('dns.ttlSeconds', section.ttlSeconds, DNS_DEFAULTS.ttlSeconds, 0, MAX_TTL_SECONDS),
    allowFrom: readNetworks(section.allowFrom),
    maxUdpPayloadBytes: readInteger('dns.maxUdpPayloadBytes', section.maxUdpPayloadBytes, DNS_DEFAULTS.maxUdpPayloadBytes, 512, 65_535),
    udpRateLimitPerSecond: readInteger('dns.udpRateLimitPerSecond', section.udpRateLimitPerSecond, DNS_DEFAULTS.udpRateLimitPerSecond, 0, DNS_RATE_MAX),
    udpRateLimitBurst: readInteger('dns.udpRateLimitBurst', section.udpRateLimitBurst, DNS_DEFAULTS.udpRateLimitBurst, 1, DNS_RATE_MAX),
  };
}

/** Default of `xds.pushCoalesceMs`: the watch streams' default window. */
export const XDS_PUSH_COALESCE_MS = 50;
const XDS_PUSH_COALESCE_MAX_MS = 10_000;

function readXds(doc: unknown, port: number | undefined): XdsConfig {
  const extra = ['lbPolicy', 'pushCoalesceMs', 'allowAnonymous', 'streamsMax', 'resourceNamesPerPrincipalMax'];
  const { section, config } = readListener('xds', doc, port, extra);
  const { lbPolicy = XDS_DEFAULTS.lbPolicy, pushCoalesceMs = XDS_PUSH_COALESCE_MS, allowAnonymous = XDS_DEFAULTS.allowAnonymous } = section;
  if (typeof lbPolicy !== 'string' || !(xdsLbPolicySettings as readonly string[]).includes(lbPolicy)) {
    throw new ProtocolConfigError('xds.lbPolicy', `must be one of ${xdsLbPolicySettings.join(', ')}`);
  }
  if (typeof pushCoalesceMs !== 'number' || !Number.isInteger(pushCoalesceMs) || pushCoalesceMs < 0 || pushCoalesceMs > XDS_PUSH_COALESCE_MAX_MS) {
    throw new ProtocolConfigError('xds.pushCoalesceMs', `must be an integer number of milliseconds from 0 to ${XDS_PUSH_COALESCE_MAX_MS}`);
  }
  if (typeof allowAnonymous !== 'boolean') throw new ProtocolConfigError('xds.allowAnonymous', 'must be true or false');
  return {
    ...config,
    lbPolicy: lbPolicy as XdsLbPolicySetting,
    pushCoalesceMs,
    allowAnonymous,
    streamsMax: readInteger('xds.streamsMax', section.streamsMax, XDS_DEFAULTS.streamsMax, 1, 1_000_000),
    resourceNamesPerPrincipalMax: readInteger('xds.resourceNamesPerPrincipalMax', section.resourceNamesPerPrincipalMax, XDS_DEFAULTS.resourceNamesPerPrincipalMax, 1, 100_000_000),
  };
}

/** The `dns`, `xds`, `consul` and `nacos` sections of the file, with their ports from flags, environment or file. */
export function readProtocols(
  doc: Json,
  ports: { dns: number | undefined; xds: number | undefined; consul: number | undefined; nacos?: number | undefined },
): ProtocolConfigs {
  return {
    dns: readDns(doc.dns, ports.dns),
    xds: readXds(doc.xds, ports.xds),
    consul: readConsul(doc.consul, ports.consul),
    nacos: readNacos(doc.nacos, ports.nacos),
  };
}

/** The `nacos` section: port and namespaces, `grpcPort` (default port + 1000) and the push settings. */
function readNacos(doc: unknown, port: number | undefined): NacosConfig {
  const names = Object.keys(NACOS_DEFAULTS) as (keyof typeof NACOS_DEFAULTS)[];
  const { section, config } = readListener('nacos', doc, port, ['grpcPort', ...names]);
  const out: NacosConfig = { ...config, grpcPort: null, ...NACOS_DEFAULTS };
  for (const name of names) {
    const [min, max] = NACOS_BOUNDS[name];
    out[name] = readInteger(`nacos.${name}`, section[name], NACOS_DEFAULTS[name], min, max);
  }
  if (section.grpcPort !== undefined) out.grpcPort = readInteger('nacos.grpcPort', section.grpcPort, 0, 0, 65_535);
  else if (config.port !== null && config.port !== 0) {
    const grpcPort = config.port + NACOS_GRPC_PORT_OFFSET;
    if (grpcPort > 65_535) throw new ProtocolConfigError('nacos.grpcPort', `nacos.port ${config.port} + ${NACOS_GRPC_PORT_OFFSET} is past 65535: set nacos.grpcPort`);
    out.grpcPort = grpcPort;
  } else if (config.port === 0) out.grpcPort = 0;
  return out;
}

/** The `consul` section: the listener's port and namespaces, and the settings of CONSUL_DEFAULTS. */
function readConsul(doc: unknown, port: number | undefined): ConsulConfig {
  const names = Object.keys(CONSUL_BOUNDS) as ConsulNumber[];
  const { section, config } = readListener('consul', doc, port, Object.keys(CONSUL_DEFAULTS));
  const out: ConsulConfig = { ...config, ...CONSUL_DEFAULTS };
  for (const name of names) {
    const value = section[name];
    if (value === undefined) continue;
    const [min, max] = CONSUL_BOUNDS[name];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new ProtocolConfigError(`consul.${name}`, `must be an integer between ${min} and ${max}`);
    }
    out[name] = value;
  }
  if (out.defaultWaitMs > out.maxWaitMs) throw new ProtocolConfigError('consul.defaultWaitMs', 'must not be longer than consul.maxWaitMs');
  const allowGetWrites = section.allowGetWrites ?? CONSUL_DEFAULTS.allowGetWrites;
  if (typeof allowGetWrites !== 'boolean') throw new ProtocolConfigError('consul.allowGetWrites', 'must be true or false');
  return { ...out, allowGetWrites };
}
