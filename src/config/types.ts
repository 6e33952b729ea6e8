import { portOption } from '../adapters/declaration.js';
import { LISTENER_ADAPTERS, type ListenerPortFlags } from '../adapters/listeners.js';
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
  /** The protocol listeners' settings, each under its name (each off unless its port is set; src/adapters/listeners.ts). */
  protocols: ProtocolConfigs;
}

/** Settings of one service (the `services` object of the file). */
export interface ServiceSettings {
  /** Overrides `cluster.protectThresholdRatio` for this service. */
  protectThresholdRatio: number;
}

/**
 * Command-line flags; each has an environment twin (see `envNames`). Each protocol listener
 * adds its port's (`dnsPort`: `--dns-port`, `REGISTRY_DNS_PORT`), from its declaration.
 */
export interface ConfigFlags extends ListenerPortFlags {
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
}

/** The environment variable of each of the peer's own flags. */
const PEER_ENV_NAMES: Record<Exclude<keyof ConfigFlags, keyof ListenerPortFlags>, string> = {
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
};

/** The environment variable of each flag: the peer's own, then each protocol listener's port (its declaration's). */
export const envNames: Record<keyof ConfigFlags, string> = {
  ...PEER_ENV_NAMES,
  ...(Object.fromEntries(LISTENER_ADAPTERS.map((adapter) => [portOption(adapter), adapter.settings.env])) as Record<keyof ListenerPortFlags, string>),
};

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8761;
export const DEFAULT_PEER_ID = 'peer-1';
