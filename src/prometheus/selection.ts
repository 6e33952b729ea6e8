import { invalid } from '../errors.js';
import { parseGroupFilter, parseName, parseNamespace } from '../registry/validate.js';
import type { PartFilter } from './target-groups.js';

/** Which targets a `GET /v1/sd/prometheus` asks for. */
export interface TargetSelection extends PartFilter {
  namespace: string;
  /** The services named (deduplicated, in the order given); null: every service of the namespace. */
  services: string[] | null;
}

/** Most services one request may name: a scrape config names a handful; this bounds the work of a bad one. */
export const MAX_SELECTED_SERVICES = 1_000;
/** Longest zone name, as the register route accepts it. */
const ZONE_MAX_LENGTH = 64;
const PARAMETERS = new Set(['namespace', 'services', 'group', 'zone']);

function once(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  // fastify's query parser makes a repeated parameter an array.
  if (typeof value !== 'string') throw invalid(name, 'must be given once');
  return value;
}

function parseServices(value: string | undefined): string[] | null {
  if (value === undefined || value === '' || value === '*') return null;
  const names = [...new Set(value.split(',').map((name) => name.trim()))];
  if (names.length > MAX_SELECTED_SERVICES) throw invalid('services', `must name at most ${MAX_SELECTED_SERVICES} services`);
  return names.map((name) => parseName('services', name));
}

function parseZone(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (value.length === 0 || value.length > ZONE_MAX_LENGTH) throw invalid('zone', `must be a zone name of 1 to ${ZONE_MAX_LENGTH} characters`);
  return value;
}

/**
 * Reads the query of `GET /v1/sd/prometheus`: `namespace` (default `default`), `services`
 * (comma-separated; omitted, empty or `*`: all), `group`, `zone`. Any other parameter is a 400:
 * a mistyped one (`service=`) in a scrape config would otherwise select everything, silently.
 */
export function parseSelection(query: Record<string, unknown>): TargetSelection {
  for (const name of Object.keys(query)) {
    if (!PARAMETERS.has(name)) throw invalid(name.slice(0, 64), 'is not a parameter of this route (it takes namespace, services, group and zone)');
  }
  return {
    namespace: parseNamespace(once('namespace', query.namespace)),
    services: parseServices(once('services', query.services)),
    group: parseGroupFilter(once('group', query.group)),
    zone: parseZone(once('zone', query.zone)),
  };
}
