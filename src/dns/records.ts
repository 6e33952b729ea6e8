import { isIP } from 'node:net';
import type { Answer, SoaAnswer } from 'dns-packet';
import type { InstanceView } from '../registry/view.js';
import type { ServiceView } from '../views/service-views.js';
import { addressName, type ServiceLookup } from './names.js';

/**
 * The records of one service name, built from a read-layer view (docs/dns.md). Pure: the
 * server encodes what these return once per view (encoding.ts) and shares the bytes.
 */

/** What every record set needs beside the view. */
export interface RecordContext {
  /** The domain, lower-case, with its trailing dot. */
  domain: string;
  ttlSeconds: number;
  /** The region of a (lower-cased) zone from the peers' configuration, when one is known. */
  regionOfZone(zone: string): string | undefined;
}

/** DNS response codes used here (RFC 1035 4.1.1, RFC 6891 for BADVERS's extended form). */
export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;

/** The sections of an answer, before encoding. */
export interface RecordSet {
  rcode: number;
  answers: Answer[];
  /** The SOA of a negative answer (NXDOMAIN, or a name without records of the asked type). */
  authorities: Answer[];
  /** A/AAAA of SRV targets. */
  additionals: Answer[];
}

/** The largest SRV weight (16 bits); instance weights go up to 1,000,000. */
const MAX_SRV_WEIGHT = 65_535;
/** A TXT character-string holds at most 255 bytes (RFC 1035 3.3); longer ones are left out. */
const MAX_TXT_STRING_BYTES = 255;
/** SRV priorities: the asked zone first, then its region, then the rest (lower is preferred, RFC 2782). */
export const PRIORITY = { zone: 0, region: 1, other: 2 } as const;

/** The instances a service name serves: UP (served: lease live or held), of the group when one is asked. */
export function selectInstances(view: ServiceView, lookup: ServiceLookup): InstanceView[] {
  return view.instances.filter((instance) => instance.status === 'UP' && (lookup.group === null || instance.group.toLowerCase() === lookup.group));
}

/**
 * Whether a zone qualifier names something: a zone of one of the instances, or of a peer.
 * Other zones answer NXDOMAIN, so that random zones cannot each get an encoding of their own.
 */
export function isKnownZone(instances: readonly InstanceView[], zone: string, context: RecordContext): boolean {
  return context.regionOfZone(zone) !== undefined || instances.some((instance) => instance.zone.toLowerCase() === zone);
}

/** An instance's SRV priority for a query near `zone` (all 0 when the query names none). */
export function priorityOf(instance: InstanceView, zone: string | null, zoneRegion: string | undefined): number {
  if (zone === null || instance.zone.toLowerCase() === zone) return PRIORITY.zone;
  return zoneRegion !== undefined && instance.region === zoneRegion ? PRIORITY.region : PRIORITY.other;
}

/** An instance's weight as SRV carries it: an integer from 0 to 65535; a positive weight stays positive. */
export function srvWeight(weight: number): number {
  if (weight <= 0) return 0;
  return Math.min(MAX_SRV_WEIGHT, Math.max(1, Math.round(weight)));
}

function familyOf(host: string): 0 | 4 | 6 {
  return isIP(host) as 0 | 4 | 6;
}

/** An address host as a record carries it: lower-case, without an IPv6 zone index (`%eth0`). */
function addressOf(host: string): string {
  return host.toLowerCase().split('%')[0]!;
}

/** The SOA of the domain: negative answers carry it (RFC 2308), its minimum is the negative TTL. */
export function soaRecord(context: RecordContext, serial: number): SoaAnswer {
  return {
    type: 'SOA',
    name: context.domain,
    ttl: context.ttlSeconds,
    data: {
      mname: `ns.${context.domain}`,
      rname: `hostmaster.${context.domain}`,
      serial: serial % 2 ** 32,
      refresh: 3_600,
      retry: 600,
      expire: 86_400,
      minimum: context.ttlSeconds,
    },
  };
}

/**
 * A and AAAA answers: the instances whose host is an address of that family, nearest first
 * when the query names a zone (only the nearest tier that has any). Hosts that are names are
 * left out (a CNAME would have to be the only record of the name): they are SRV targets.
 * The list is rotated by the second the view was built, so that clients taking the first
 * address spread over the instances while the bytes are still built once per view.
 */
export function addressRecords(owner: string, instances: readonly InstanceView[], family: 4 | 6, lookup: ServiceLookup, context: RecordContext, rotateBy: number): Answer[] {
  const region = lookup.zone === null ? undefined : context.regionOfZone(lookup.zone) ?? regionOfInstances(instances, lookup.zone);
  const candidates = instances.filter((instance) => familyOf(instance.host) === family);
  // A loop, not Math.min(...): a service may hold more instances than a call takes arguments
  // (about 125,000; instancesPerServiceMax goes up to 10,000,000).
  let best = Number.POSITIVE_INFINITY;
  for (const instance of candidates) best = Math.min(best, priorityOf(instance, lookup.zone, region));
  const nearest = candidates.filter((instance) => priorityOf(instance, lookup.zone, region) === best);
  const addresses = [...new Set(nearest.map((instance) => addressOf(instance.host)))];
  const start = addresses.length === 0 ? 0 : rotateBy % addresses.length;
  const rotated = [...addresses.slice(start), ...addresses.slice(0, start)];
  return rotated.map((address) => ({ type: family === 4 ? 'A' : 'AAAA', name: owner, ttl: context.ttlSeconds, data: address }) as Answer);
}

function regionOfInstances(instances: readonly InstanceView[], zone: string): string | undefined {
  return instances.find((instance) => instance.zone.toLowerCase() === zone && instance.region !== null)?.region ?? undefined;
}

/**
 * SRV answers, one per instance: its port, its weight, its priority by the asked zone, and a
 * target: `<hex address>-<port>.addr.<domain>` for an address (its A or AAAA goes in the
 * additional section), the host itself for a name (the resolver looks it up).
 */
export function srvRecords(owner: string, instances: readonly InstanceView[], lookup: ServiceLookup, context: RecordContext): { answers: Answer[]; additionals: Answer[] } {
  const region = lookup.zone === null ? undefined : context.regionOfZone(lookup.zone) ?? regionOfInstances(instances, lookup.zone);
  const answers: Answer[] = [];
  const additionals = new Map<string, Answer>();
  for (const instance of instances) {
    const family = familyOf(instance.host);
    const host = family === 0 ? instance.host.toLowerCase().replace(/\.$/, '') : addressOf(instance.host);
    const target = family === 0 ? host : addressName(host, family, context.domain, instance.port);
    answers.push({
      type: 'SRV',
      name: owner,
      ttl: context.ttlSeconds,
      data: { priority: priorityOf(instance, lookup.zone, region), weight: srvWeight(instance.weight), port: instance.port, target },
    });
    if (family !== 0 && !additionals.has(target)) additionals.set(target, { type: family === 4 ? 'A' : 'AAAA', name: target, ttl: context.ttlSeconds, data: host } as Answer);
  }
  return { answers, additionals: [...additionals.values()] };
}

/**
 * TXT answers, one per instance, as RFC 1464 `key=value` strings: `instance`, `zone`, `group`,
 * `port` first, then the metadata sorted by key. A string over 255 bytes is left out.
 */
export function txtRecords(owner: string, instances: readonly InstanceView[], context: RecordContext): Answer[] {
  return instances.map((instance) => {
    const pairs = [
      `instance=${instance.instanceId}`,
      `zone=${instance.zone}`,
      `group=${instance.group}`,
      `port=${instance.port}`,
      ...Object.keys(instance.metadata)
        .sort()
        .map((key) => `${key}=${instance.metadata[key]}`),
    ].filter((pair) => Buffer.byteLength(pair) <= MAX_TXT_STRING_BYTES);
    return { type: 'TXT', name: owner, ttl: context.ttlSeconds, data: pairs };
  });
}

/**
 * The records answering `type` for a service name. The name exists while the service has an
 * UP instance (of the group, when asked) and the zone, when asked, is known: else NXDOMAIN.
 * A type the name has no record of answers NOERROR with no answer (NODATA), with the SOA.
 */
export function serviceRecords(type: string, owner: string, view: ServiceView, lookup: ServiceLookup, context: RecordContext): RecordSet {
  const instances = selectInstances(view, lookup);
  const soa = [soaRecord(context, view.revision)];
  if (instances.length === 0 || (lookup.zone !== null && !isKnownZone(instances, lookup.zone, context))) {
    return { rcode: RCODE.NXDOMAIN, answers: [], authorities: soa, additionals: [] };
  }
  const rotateBy = Math.floor(view.builtAtMs / 1_000);
  let answers: Answer[] = [];
  let additionals: Answer[] = [];
  if (type === 'A' || type === 'ANY') answers = answers.concat(addressRecords(owner, instances, 4, lookup, context, rotateBy));
  if (type === 'AAAA' || type === 'ANY') answers = answers.concat(addressRecords(owner, instances, 6, lookup, context, rotateBy));
  if (type === 'SRV') ({ answers, additionals } = srvRecords(owner, instances, lookup, context));
  if (type === 'TXT') answers = txtRecords(owner, instances, context);
  return { rcode: RCODE.NOERROR, answers, authorities: answers.length === 0 ? soa : [], additionals };
}
