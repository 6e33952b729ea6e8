import { ConfigError, isObject, readId, readSetting, readString, readUrl, rejectUnknown } from './fields.js';
import { clusterSettings, type ClusterSettings, type LimitSettings } from './settings.js';
import type { PeerConfig, ServiceSettings } from './types.js';

/** The file's list sections (`peers`, `services`) and the checks across settings. */

const SERVICE_KEY = /^(?:([A-Za-z0-9][A-Za-z0-9._:-]{0,127})\/)?([A-Za-z0-9][A-Za-z0-9._:-]{0,127})$/;
const PEER_FIELDS = new Set(['id', 'url', 'region', 'zone']);

/** `peers`: the cluster file's list of `{id, url, region, zone}`, ids unique. */
export function readPeers(value: unknown): PeerConfig[] {
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
export function readServices(value: unknown, cluster: ClusterSettings): Record<string, ServiceSettings> {
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

/** Limits that are valid alone but not together. */
export function checkLimitsConsistency(limits: LimitSettings): void {
  // Node refuses a server whose headers timeout exceeds its request timeout.
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new ConfigError('limits.headersTimeoutMs', 'must not exceed limits.requestTimeoutMs');
  }
}

/** Lease and heartbeat settings that are valid alone but not together (a heartbeat must come before its lease ends). */
export function checkClusterConsistency(cluster: ClusterSettings): void {
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
