/**
 * The names the DNS listener answers (docs/dns.md), parsed from a query name into what to look
 * up. Pure: the server lower-cases the name (RFC 4343) and gives the served namespaces.
 *
 *   <domain>                                          the apex: SOA
 *   [<zone>.][<group>.group.]<service>.service[.<namespace>].<domain>
 *                                                     A, AAAA, SRV, TXT of a service's UP instances
 *   _<service>._tcp.service[.<namespace>].<domain>    the RFC 2782 form (also _udp): the same records
 *   <hex address>[-<port>].addr.<domain>              an SRV target: A (8 hex digits) or AAAA (32)
 *
 * Without `.<namespace>` the namespace is `default`. Namespaces are matched against the served
 * ones (`dns.namespaces`) as a suffix, so a namespace may hold dots; a service is one label.
 */

/** What a query name asks for. */
export type Lookup =
  /** Not under the domain: the peer answers for its domain only (REFUSED). */
  | { kind: 'outside' }
  /** The domain itself. */
  | { kind: 'apex' }
  /** Under the domain, but no name the peer has (NXDOMAIN). */
  | { kind: 'unknown' }
  /** An SRV target naming an address. */
  | { kind: 'address'; address: string; family: 4 | 6 }
  | ServiceLookup;

export interface ServiceLookup {
  kind: 'service';
  /** The namespace as configured (its own case). */
  namespace: string;
  /** The service label, lower-cased. */
  service: string;
  /** The zone the query is near (lower-cased), or null: SRV priorities and A answers prefer it. */
  zone: string | null;
  /** Only this group's instances (lower-cased), or null for every group. */
  group: string | null;
}

/** What a parse needs to know: the domain (lower-case, trailing dot) and the served namespaces. */
export interface NameSpace {
  domain: string;
  namespaces: readonly string[];
}

/** A parser for one domain and set of namespaces, with the namespace suffixes prepared once. */
export interface NameParser {
  parse(lowerName: string): Lookup;
}

const HEX = /^[0-9a-f]+$/;

/**
 * Lower-cases a query name as RFC 4343 does (ASCII letters only). A name with other bytes can
 * name nothing here (service and namespace names are ASCII), so it answers null.
 */
export function lowerAscii(name: string): string | null {
  // eslint-disable-next-line no-control-regex
  return /^[\x00-\x7f]*$/.test(name) ? name.toLowerCase() : null;
}

/**
 * The SRV target name of an instance's address: the address's bytes in hex (IPv6 in full, 32
 * digits) and the port, under `addr.`. The port makes the target of every SRV record its own:
 * clients such as HAProxy match additional records to SRV records by target, one each, so
 * instances sharing a host behind one target would leave all but one unresolved.
 */
export function addressName(address: string, family: 4 | 6, domain: string, port?: number): string {
  const hex =
    family === 4
      ? address
          .split('.')
          .map((part) => Number(part).toString(16).padStart(2, '0'))
          .join('')
      : expandIpv6(address.split('%')[0]!);
  return `${hex}${port === undefined ? '' : `-${port}`}.addr.${domain}`;
}

/** The 32 hex digits of an IPv6 address (with an embedded IPv4 tail, as `::ffff:1.2.3.4`, too). */
function expandIpv6(address: string): string {
  let text = address.toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const bytes = v4.slice(1).map((part) => Number(part).toString(16).padStart(2, '0'));
    text = `${text.slice(0, v4.index)}${bytes[0]}${bytes[1]}:${bytes[2]}${bytes[3]}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array.from({ length: tail === undefined ? 0 : missing }, () => '0'), ...tailGroups];
  return groups.map((group) => group.padStart(4, '0')).join('');
}

function parseAddress(label: string): Lookup {
  const [hex = '', port, extra] = label.split('-');
  if (!HEX.test(hex) || extra !== undefined || (port !== undefined && !/^[1-9][0-9]{0,4}$/.test(port))) return { kind: 'unknown' };
  if (hex.length === 8) {
    const bytes = [0, 2, 4, 6].map((at) => parseInt(hex.slice(at, at + 2), 16));
    return { kind: 'address', address: bytes.join('.'), family: 4 };
  }
  if (hex.length === 32) {
    const groups = Array.from({ length: 8 }, (_, i) => hex.slice(i * 4, i * 4 + 4));
    return { kind: 'address', address: groups.join(':'), family: 6 };
  }
  return { kind: 'unknown' };
}

/** The labels before `service[.<namespace>]`: the service and its qualifiers. */
function parseService(qualifiers: string[], namespace: string): Lookup {
  const unknown: Lookup = { kind: 'unknown' };
  if (qualifiers.length === 2 && qualifiers[0]!.startsWith('_') && (qualifiers[1] === '_tcp' || qualifiers[1] === '_udp')) {
    const service = qualifiers[0]!.slice(1);
    return service === '' ? unknown : { kind: 'service', namespace, service, zone: null, group: null };
  }
  const service = qualifiers.pop();
  if (service === undefined || service === '') return unknown;
  let group: string | null = null;
  if (qualifiers.length >= 2 && qualifiers.at(-1) === 'group') {
    group = qualifiers.at(-2)!;
    qualifiers.length -= 2;
  }
  let zone: string | null = null;
  if (qualifiers.length === 1) zone = qualifiers.pop()!;
  if (qualifiers.length > 0) return unknown;
  return { kind: 'service', namespace, service, zone, group };
}

/** Builds the parser of one configuration (the namespaces' label suffixes are computed here, once). */
export function nameParser(space: NameSpace): NameParser {
  const domain = space.domain.replace(/\.$/, '');
  const suffix = `.${domain}`;
  // Longest namespace first, so that `a.b` wins over `b` when both are served.
  const namespaces = space.namespaces
    .map((namespace) => ({ namespace, labels: namespace.toLowerCase().split('.') }))
    .sort((x, y) => y.labels.length - x.labels.length);
  const servesDefault = space.namespaces.includes('default');
  return {
    parse(lowerName: string): Lookup {
      const name = lowerName.endsWith('.') ? lowerName.slice(0, -1) : lowerName;
      if (name === domain) return { kind: 'apex' };
      if (!name.endsWith(suffix)) return { kind: 'outside' };
      const labels = name.slice(0, -suffix.length).split('.');
      if (labels.length === 2 && labels[1] === 'addr') return parseAddress(labels[0]!);
      for (const { namespace, labels: tail } of namespaces) {
        const at = labels.length - tail.length - 1;
        if (at < 1 || labels[at] !== 'service') continue;
        if (tail.every((label, i) => labels[at + 1 + i] === label)) return parseService(labels.slice(0, at), namespace);
      }
      if (servesDefault && labels.length >= 2 && labels.at(-1) === 'service') return parseService(labels.slice(0, -1), 'default');
      return { kind: 'unknown' };
    },
  };
}
