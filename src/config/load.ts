import { readFile } from 'node:fs/promises';
import { profileNames, profiles, type ProfileName } from './profiles.js';
import { ProtocolConfigError, readProtocols, type ProtocolConfigs } from './protocols.js';
import { readSecurity, SecurityConfigError, type SecurityConfig, type TlsConfig } from './security.js';
import {
  clusterSettings,
  defaultsOf,
  limitSettings,
  storageSettings,
  type ClusterSettings,
  type LimitSettings,
  type NumericSetting,
  type Setting,
  type SettingValues,
  type StorageSettings,
} from './settings.js';

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
};

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8761;
export const DEFAULT_PEER_ID = 'peer-1';
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const FILE_FIELDS = new Set([
  'cluster',
  'peers',
  'id',
  'host',
  'port',
  'url',
  'dataDir',
  'storage',
  'logLevel',
  'region',
  'zone',
  'limits',
  'services',
  'security',
  'tls',
  'dns',
  'xds',
  'consul',
]);
const SERVICE_KEY = /^(?:([A-Za-z0-9][A-Za-z0-9._:-]{0,127})\/)?([A-Za-z0-9][A-Za-z0-9._:-]{0,127})$/;
const CLUSTER_FIELDS = new Set(['name', 'profile', ...Object.keys(clusterSettings)]);
const PEER_FIELDS = new Set(['id', 'url', 'region', 'zone']);

/** A configuration problem: names the field and what is wrong with it. Exit code 2. */
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function rejectUnknown(object: Json, known: Set<string>, prefix: string): void {
  for (const field of Object.keys(object)) {
    if (!known.has(field)) throw new ConfigError(`${prefix}${field}`, 'is not a known setting');
  }
}

function readString(field: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) throw new ConfigError(field, 'must be a non-empty string');
  return value;
}

function readId(field: string, value: unknown): string | undefined {
  const id = readString(field, value);
  if (id !== undefined && !ID_PATTERN.test(id)) {
    throw new ConfigError(field, 'must be 1-64 letters, digits, ".", "_", ":" or "-", starting with a letter or digit');
  }
  return id;
}

function readUrl(field: string, value: unknown): string | undefined {
  const text = readString(field, value);
  if (text === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(field, `must be an absolute http(s) URL (got ${JSON.stringify(text)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(field, 'must use http or https');
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new ConfigError(field, 'must be a base URL with no path, query or fragment');
  }
  return url.origin;
}

function readPort(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const port = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(field, `must be an integer from 0 to 65535 (got ${JSON.stringify(value)})`);
  }
  return port;
}

function readEnum<T extends string>(field: string, value: unknown, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new ConfigError(field, `must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  }
  return value as T;
}

/** Checks one numeric setting against its table entry. */
export function readSetting(field: string, value: unknown, setting: NumericSetting): number {
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (setting.kind !== 'int' || Number.isInteger(value)) &&
    value >= setting.min &&
    value <= setting.max;
  if (!ok) {
    const what = setting.kind === 'int' ? 'an integer' : 'a number';
    throw new ConfigError(field, `must be ${what} from ${setting.min} to ${setting.max} (got ${JSON.stringify(value)})`);
  }
  return value as number;
}

function readSettings<T extends Record<string, Setting>>(
  table: T,
  base: SettingValues<T>,
  input: Json,
  prefix: string,
): SettingValues<T> {
  const out: Record<string, unknown> = { ...base };
  for (const [name, setting] of Object.entries(table)) {
    if (input[name] === undefined) continue;
    out[name] =
      setting.kind === 'enum'
        ? readEnum(`${prefix}${name}`, input[name], setting.values)
        : readSetting(`${prefix}${name}`, input[name], setting);
  }
  return out as SettingValues<T>;
}

function readPeers(value: unknown): PeerConfig[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ConfigError('peers', 'must be an array of {id, url, region, zone}');
  const seen = new Set<string>();
  return value.map((item, index) => {
    const field = `peers[${index}]`;
    if (!isObject(item)) throw new ConfigError(field, 'must be an object {id, url, region, zone}');
    rejectUnknown(item, PEER_FIELDS, `${field}.`);
    const id = readId(`${field}.id`, item.id);
    const url = readUrl(`${field}.url`, item.url);
    if (id === undefined) throw new ConfigError(`${field}.id`, 'is required');
    if (url === undefined) throw new ConfigError(`${field}.url`, 'is required');
    if (seen.has(id)) throw new ConfigError(`${field}.id`, `duplicates peer id ${JSON.stringify(id)}`);
    seen.add(id);
    return {
      id,
      url,
      region: readString(`${field}.region`, item.region) ?? 'default',
      zone: readString(`${field}.zone`, item.zone) ?? '',
    };
  });
}

/** `services`: `{"orders": {...}, "team-a/billing": {...}}`; a bare name is in the `default` namespace. */
function readServices(value: unknown, cluster: ClusterSettings): Record<string, ServiceSettings> {
  if (value === undefined) return {};
  if (!isObject(value)) throw new ConfigError('services', 'must be an object keyed by service name');
  const out: Record<string, ServiceSettings> = {};
  for (const [key, settings] of Object.entries(value)) {
    const match = SERVICE_KEY.exec(key);
    if (!match) throw new ConfigError(`services.${key}`, 'must be named "service" or "namespace/service"');
    if (!isObject(settings)) throw new ConfigError(`services.${key}`, 'must be an object');
    rejectUnknown(settings, new Set(['protectThresholdRatio']), `services.${key}.`);
    const ratio =
      settings.protectThresholdRatio === undefined
        ? cluster.protectThresholdRatio
        : readSetting(`services.${key}.protectThresholdRatio`, settings.protectThresholdRatio, clusterSettings.protectThresholdRatio);
    out[`${match[1] ?? 'default'}/${match[2]}`] = { protectThresholdRatio: ratio };
  }
  return out;
}

function checkLimitsConsistency(limits: LimitSettings): void {
  // Node refuses a server whose headers timeout exceeds its request timeout.
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new ConfigError('limits.headersTimeoutMs', 'must not exceed limits.requestTimeoutMs');
  }
}

function checkClusterConsistency(cluster: ClusterSettings): void {
  if (cluster.minLeaseDurationMs > cluster.maxLeaseDurationMs) {
    throw new ConfigError('cluster.minLeaseDurationMs', 'must not exceed cluster.maxLeaseDurationMs');
  }
  if (cluster.leaseDurationMs < cluster.minLeaseDurationMs || cluster.leaseDurationMs > cluster.maxLeaseDurationMs) {
    throw new ConfigError('cluster.leaseDurationMs', 'must lie between cluster.minLeaseDurationMs and cluster.maxLeaseDurationMs');
  }
  if (cluster.heartbeatIntervalMs >= cluster.leaseDurationMs) {
    throw new ConfigError('cluster.heartbeatIntervalMs', 'must be below cluster.leaseDurationMs');
  }
}

/**
 * Builds the configuration from its sources. Precedence: flags beat the environment, which
 * beats the file, which beats the profile's defaults. Throws ConfigError naming the field.
 */
export function resolveConfig(
  file: unknown,
  env: Record<string, string | undefined>,
  flags: ConfigFlags,
): RegistryConfig {
  const doc: Json = file === undefined ? {} : isObject(file) ? file : fail('config', 'the file must hold a JSON object');
  rejectUnknown(doc, FILE_FIELDS, '');
  const clusterDoc: Json = doc.cluster === undefined ? {} : isObject(doc.cluster) ? doc.cluster : fail('cluster', 'must be an object');
  rejectUnknown(clusterDoc, CLUSTER_FIELDS, 'cluster.');
  const limitsDoc: Json = doc.limits === undefined ? {} : isObject(doc.limits) ? doc.limits : fail('limits', 'must be an object');
  rejectUnknown(limitsDoc, new Set(Object.keys(limitSettings)), 'limits.');

  const source = (name: keyof ConfigFlags, fileValue: unknown, fileField: string = name): [string, unknown] =>
    layered(name, flags, env, fileValue, fileField);
  const profile = readEnum(...source('profile', clusterDoc.profile, 'cluster.profile'), profileNames) ?? 'lan';
  const base = { ...defaultsOf(clusterSettings), ...profiles[profile].overrides };
  const cluster = readSettings(clusterSettings, base, clusterDoc, 'cluster.');
  checkClusterConsistency(cluster);
  const limits = readSettings(limitSettings, defaultsOf(limitSettings), limitsDoc, 'limits.');
  const storageDoc: Json = doc.storage === undefined ? {} : isObject(doc.storage) ? doc.storage : fail('storage', 'must be an object');
  rejectUnknown(storageDoc, new Set(Object.keys(storageSettings)), 'storage.');
  const [syncField, syncValue] = source('syncPolicy', storageDoc.syncPolicy, 'storage.syncPolicy');
  const storage = readSettings(storageSettings, defaultsOf(storageSettings), { ...storageDoc, syncPolicy: undefined }, 'storage.');
  storage.syncPolicy = readEnum(syncField, syncValue, storageSettings.syncPolicy.values) ?? storage.syncPolicy;
  checkLimitsConsistency(limits);

  const peers = readPeers(doc.peers);
  const explicitId = readId(...source('id', doc.id));
  const onlyPeer = peers.length === 1 ? peers[0] : undefined;
  const id = explicitId ?? onlyPeer?.id ?? (peers.length === 0 ? DEFAULT_PEER_ID : undefined);
  if (id === undefined) {
    throw new ConfigError('id', `is required when the cluster lists several peers (one of ${peers.map((p) => p.id).join(', ')}); pass --id`);
  }
  const listed = peers.find((peer) => peer.id === id);
  const listedUrl = listed ? new URL(listed.url) : undefined;
  const givenPort = readPort(...source('port', doc.port));
  const givenUrl = readUrl(...source('url', doc.url));
  if (!listed && peers.length > 0 && givenPort === undefined && givenUrl === undefined) {
    // A typo in --id would otherwise start an extra peer on the default port (often a listed
    // peer's own) and list it as up. Joining as a new peer takes an address of its own.
    throw new ConfigError(
      source('id', doc.id)[0],
      `${id} is not one of the peers in the cluster file (${peers.map((peer) => peer.id).join(', ')}); ` +
        'pass one of them, or, to join the cluster as a new peer, give its own address too with --port or --url',
    );
  }

  const host =
    readString(...source('host', doc.host)) ??
    listedUrl?.hostname.replace(/^\[|\]$/g, '') ??
    DEFAULT_HOST;
  const tlsDoc = isObject(doc.tls) ? doc.tls : {};
  let secured: { security: SecurityConfig; tls: TlsConfig };
  try {
    secured = readSecurity(doc.security, doc.tls, {
      env,
      insecure: source('insecure', undefined),
      tls: {
        certFile: source('tlsCert', tlsDoc.certFile, 'tls.certFile'),
        keyFile: source('tlsKey', tlsDoc.keyFile, 'tls.keyFile'),
        caFile: source('tlsCa', tlsDoc.caFile, 'tls.caFile'),
      },
    });
  } catch (error) {
    if (error instanceof SecurityConfigError) throw new ConfigError(error.field, error.problem);
    throw error;
  }
  const serving = secured.tls.certFile === null ? 'http' : 'https';
  const port =
    givenPort ??
    (listedUrl ? Number(listedUrl.port || (listedUrl.protocol === 'https:' ? 443 : 80)) : DEFAULT_PORT);
  const url =
    givenUrl ??
    listed?.url ??
    `${serving}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (serving === 'https' && !url.startsWith('https:')) {
    // Other peers would speak plain HTTP to a TLS port.
    throw new ConfigError('url', `must use https when this peer serves TLS (tls.certFile is set; got ${url})`);
  }
  const self: PeerConfig = {
    id,
    url,
    region: readString(...source('region', doc.region)) ?? listed?.region ?? 'default',
    zone: readString(...source('zone', doc.zone)) ?? listed?.zone ?? '',
  };
  const dataDir = readString(...source('dataDir', doc.dataDir)) ?? null;
  const logLevel =
    readEnum(...source('logLevel', doc.logLevel), logLevels) ?? 'info';
  const clusterName = readString('cluster.name', clusterDoc.name) ?? 'default';
  const portOf = (name: 'dnsPort' | 'xdsPort' | 'consulPort', section: unknown, field: string) =>
    readPort(...source(name, isObject(section) ? section.port : undefined, field));
  let protocols: ProtocolConfigs;
  try {
    protocols = readProtocols(doc, {
      dns: portOf('dnsPort', doc.dns, 'dns.port'),
      xds: portOf('xdsPort', doc.xds, 'xds.port'),
      consul: portOf('consulPort', doc.consul, 'consul.port'),
    });
  } catch (error) {
    if (error instanceof ProtocolConfigError) throw new ConfigError(error.field, error.problem);
    throw error;
  }

  return {
    self,
    host,
    port,
    dataDir,
    storage,
    logLevel,
    clusterName,
    profile,
    cluster,
    limits,
    ...secured,
    seeds: peers.filter((peer) => peer.id !== id),
    services: readServices(doc.services, cluster),
    protocols,
  };
}

/**
 * The value of one setting from the highest-precedence source that has it (flag, then
 * environment, then file), with the name to blame in an error: `--flag`, `ENV_NAME` or the
 * file's field.
 */
function layered(
  name: keyof ConfigFlags,
  flags: ConfigFlags,
  env: Record<string, string | undefined>,
  fileValue: unknown,
  fileField: string,
): [string, unknown] {
  if (flags[name] !== undefined) return [`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, flags[name]];
  const envValue = env[envNames[name]];
  if (envValue !== undefined && envValue !== '') return [envNames[name], envValue];
  return [fileField, fileValue];
}

function fail(field: string, problem: string): never {
  throw new ConfigError(field, problem);
}

/** Reads and parses the config file (the only I/O here). */
export async function readConfigFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError('config', `cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError('config', `${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** The whole configuration of a process: file (if any), environment and flags. */
export async function loadConfig(env: Record<string, string | undefined>, flags: ConfigFlags): Promise<RegistryConfig> {
  const path = flags.config ?? (env[envNames.config] || undefined);
  const file = path === undefined ? undefined : await readConfigFile(path);
  return resolveConfig(file, env, flags);
}
