import { invalid } from '../errors.js';
import { DEFAULT_GROUP } from '../registry/types.js';
import { DEFAULT_NAMESPACE, parseName } from '../registry/validate.js';

/**
 * How Nacos names map onto the registry's (docs/nacos.md):
 * - `namespaceId` is our namespace; Nacos's `public` (and none) is our `default`;
 * - `groupName` is our group (`DEFAULT_GROUP` by default, as in Nacos);
 * - `clusterName` is our zone; Nacos's `DEFAULT` cluster is the empty zone;
 * - a Nacos `serviceName` may carry its group as `GROUP@@name`.
 */
export const NACOS_PUBLIC_NAMESPACE = 'public';
export const NACOS_DEFAULT_CLUSTER = 'DEFAULT';
export const GROUP_SEPARATOR = '@@';

/** Our namespace of a Nacos `namespaceId`. */
export function namespaceOfNacos(namespaceId: unknown): string {
  if (namespaceId === undefined || namespaceId === '' || namespaceId === NACOS_PUBLIC_NAMESPACE) return DEFAULT_NAMESPACE;
  return parseName('namespaceId', namespaceId);
}

/** The Nacos `namespaceId` of our namespace. */
export function nacosNamespaceOf(namespace: string): string {
  return namespace === DEFAULT_NAMESPACE ? NACOS_PUBLIC_NAMESPACE : namespace;
}

export interface GroupedName {
  group: string;
  service: string;
}

/**
 * A service name as Nacos clients send it: `GROUP@@name`, or a plain name whose group is
 * `groupName` (or `DEFAULT_GROUP`). A name and a group that disagree are refused.
 */
export function parseServiceName(serviceName: unknown, groupName?: unknown): GroupedName {
  if (typeof serviceName !== 'string' || serviceName === '') throw invalid('serviceName', 'is required');
  const at = serviceName.indexOf(GROUP_SEPARATOR);
  const named = groupName === undefined || groupName === '' ? undefined : parseName('groupName', groupName);
  if (at < 0) return { group: named ?? DEFAULT_GROUP, service: parseName('serviceName', serviceName) };
  const group = parseName('serviceName', serviceName.slice(0, at));
  const service = parseName('serviceName', serviceName.slice(at + GROUP_SEPARATOR.length));
  if (named !== undefined && named !== group) throw invalid('groupName', `is ${named} but serviceName names group ${group}`);
  return { group, service };
}

/** `GROUP@@name`, as Nacos answers service names. */
export function groupedName(group: string, service: string): string {
  return `${group}${GROUP_SEPARATOR}${service}`;
}

/** Our zone of a Nacos cluster name. */
export function zoneOfCluster(clusterName: unknown): string {
  if (clusterName === undefined || clusterName === '' || clusterName === NACOS_DEFAULT_CLUSTER) return '';
  return parseName('clusterName', clusterName);
}

/** The Nacos cluster name of our zone. */
export function clusterOfZone(zone: string): string {
  return zone === '' ? NACOS_DEFAULT_CLUSTER : zone;
}

/** The zones a `clusters` filter (comma-separated cluster names) asks for; null for every zone. */
export function zonesOfClusters(clusters: unknown): Set<string> | null {
  if (clusters === undefined || clusters === '') return null;
  if (typeof clusters !== 'string' || clusters.length > 4_096) throw invalid('clusters', 'must be comma-separated cluster names (at most 4096 characters)');
  return new Set(clusters.split(',').filter((name) => name !== '').map(zoneOfCluster));
}

/** Our instance id of a Nacos instance: `ip:port`, the native API's default, so both name it alike. */
export function instanceIdOf(ip: string, port: number): string {
  return `${ip}:${port}`;
}
