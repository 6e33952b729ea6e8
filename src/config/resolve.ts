import { LISTENER_ADAPTERS } from '../adapters/listeners.js';
import { portOption } from '../adapters/declaration.js';
import { profileNames, profiles } from './profiles.js';
import { ProtocolConfigError, readProtocols, type ProtocolConfigs } from './protocols.js';
import { readSecurity, SecurityConfigError, type SecurityConfig, type TlsConfig } from './security.js';
import { ConfigError, fail, isObject, readEnum, readId, readPort, readSettings, readString, readUrl, rejectUnknown, type Json } from './fields.js';
import { checkClusterConsistency, checkLimitsConsistency, readPeers, readServices } from './sections.js';
import { clusterSettings, defaultsOf, limitSettings, storageSettings } from './settings.js';
import { DEFAULT_HOST, DEFAULT_PEER_ID, DEFAULT_PORT, envNames, logLevels, type ConfigFlags, type PeerConfig, type RegistryConfig } from './types.js';

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
  // Each protocol listener's section (src/adapters/listeners.ts).
  ...LISTENER_ADAPTERS.map((adapter) => adapter.name),
]);
const CLUSTER_FIELDS = new Set(['name', 'profile', ...Object.keys(clusterSettings)]);

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
  let protocols: ProtocolConfigs;
  try {
    protocols = readProtocols(doc, (adapter) => {
      const section = doc[adapter.name];
      return readPort(...source(portOption(adapter) as keyof ConfigFlags, isObject(section) ? section.port : undefined, `${adapter.name}.port`));
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
