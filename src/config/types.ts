import type { ProfileName } from './profiles.js';
import type { ProtocolConfigs } from './protocols.js';
import type { SecurityConfig, TlsConfig } from './security.js';
import type { ClusterSettings, LimitSettings, StorageSettings } from './settings.js';

/**
 * The configuration's shape: the validated object (RegistryConfig), the flags and their
 * environment twins, and the defaults. resolve.ts builds it; load.ts re-exports all of it.
 */
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];

export interface PeerConfig {
  id: string;
  /** Base URL other peers use to reach this peer, e.g. `http://127.0.0.1:8761`. */
  url: string;
  region: string;
  zone: string;
}

/** The one validated configuration object every part of a peer is built from. */
export interface RegistryConfig {
  /** This peer. */
  self: PeerConfig;
  /** Address the HTTP server listens on. */
  host: string;
  port: number;
  /** Where the peer keeps its log and snapshots; null keeps it purely in memory. */
  dataDir: string | null;
  /** How the data dir is written (ignored without one). */
  storage: StorageSettings;
  logLevel: LogLevel;
  clusterName: string;
  profile: ProfileName;
  cluster: ClusterSettings;
  limits: LimitSettings;
  /** Client tokens, peer authentication, the Eureka namespace (docs/security.md). */
  security: SecurityConfig;
  /** Certificate files; all null for plain HTTP. */
  tls: TlsConfig;
  /** The other peers known at start (seeds); more are learnt from them. Never includes `self`. */
  seeds: PeerConfig[];
  /** Per-service settings, keyed `namespace/service`. */
  services: Record<string, ServiceSettings>;
  /** The DNS, xDS and Consul listeners (each off unless its port is set; see protocols.ts). */
  protocols: ProtocolConfigs;
}

/** Settings of one service (the `services` object of the file). */
export interface ServiceSettings {
  /** Overrides `cluster.protectThresholdRatio` for this service. */
  protectThresholdRatio: number;
}

/** Command-line flags; each has an environment twin (see `envNames`). */
export interface ConfigFlags {
  config?: string;
  id?: string;
  host?: string;
  port?: string | number;
  dataDir?: string;
  syncPolicy?: string;
  logLevel?: string;
  profile?: string;
  url?: string;
  region?: string;
  zone?: string;
  /** Start on a non-loopback address even with no authentication (a warning at every start). */
  insecure?: boolean | string;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  /** Serve DNS (UDP and TCP) on this port (docs/dns.md). */
  dnsPort?: string | number;
  /** Serve xDS (gRPC ADS) on this port (docs/xds.md). */
  xdsPort?: string | number;
  /** Serve the Consul-compatible HTTP API on this port (docs/consul.md). */
  consulPort?: string | number;
  /** Serve the Nacos naming API on this port (HTTP and UDP push; gRPC at port + 1000; docs/nacos.md). */
  nacosPort?: string | number;
}

/** The environment variable of each flag. */
export const envNames: Record<keyof ConfigFlags, string> = {
  config: 'REGISTRY_CONFIG',
  id: 'REGISTRY_ID',
  host: 'REGISTRY_HOST',
  port: 'REGISTRY_PORT',
  dataDir: 'REGISTRY_DATA_DIR',
  syncPolicy: 'REGISTRY_SYNC_POLICY',
  logLevel: 'REGISTRY_LOG_LEVEL',
  profile: 'REGISTRY_PROFILE',
  url: 'REGISTRY_URL',
  region: 'REGISTRY_REGION',
  zone: 'REGISTRY_ZONE',
  insecure: 'REGISTRY_INSECURE',
  tlsCert: 'REGISTRY_TLS_CERT',
  tlsKey: 'REGISTRY_TLS_KEY',
  tlsCa: 'REGISTRY_TLS_CA',
  dnsPort: 'REGISTRY_DNS_PORT',
  xdsPort: 'REGISTRY_XDS_PORT',
  consulPort: 'REGISTRY_CONSUL_PORT',
  nacosPort: 'REGISTRY_NACOS_PORT',
};

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8761;
export const DEFAULT_PEER_ID = 'peer-1';
