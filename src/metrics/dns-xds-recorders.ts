/**
 * The figures only DNS and xDS have (docs/metrics.md, "Protocols"): DNS queries by transport,
 * query type and response code, UDP answers truncated; xDS ACKs and NACKs by resource type.
 * Every label value comes from a fixed table (anything else is `other`), so each series has a
 * known, small label set; a record is an index computation and an array increment.
 */

/** Query types counted by name; any other is `other`. */
export const DNS_QUERY_TYPES: ReadonlyMap<number, string> = new Map([
  [1, 'A'], [2, 'NS'], [5, 'CNAME'], [6, 'SOA'], [12, 'PTR'], [15, 'MX'], [16, 'TXT'], [28, 'AAAA'], [33, 'SRV'], [255, 'ANY'],
]);
/** Response codes counted by name (RFC 1035 and 2136); any other is `other`. */
export const DNS_RCODES: readonly string[] = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED'];
export const DNS_TRANSPORTS = ['udp', 'tcp'] as const;
export type DnsTransport = (typeof DNS_TRANSPORTS)[number];

const TYPE_NAMES: readonly string[] = [...DNS_QUERY_TYPES.values(), 'other'];
/** Query type number -> column; built once. */
const TYPE_INDEX = new Map([...DNS_QUERY_TYPES.keys()].map((type, index) => [type, index]));
const TYPE_BY_NAME = new Map([...DNS_QUERY_TYPES.values()].map((name, index) => [name, index]));
const RCODE_NAMES: readonly string[] = [...DNS_RCODES, 'other'];

/** DNS queries answered, and UDP answers truncated (TC set: the resolver retries over TCP). */
export class DnsRecorder {
  /** Counts by transport, query type and response code: `[transport][type][rcode]` flattened. */
  readonly queries = new Float64Array(DNS_TRANSPORTS.length * TYPE_NAMES.length * RCODE_NAMES.length);
  truncated = 0;

  /**
   * One query answered: `type` as its number (dns-packet's `qtype`) or name (`'SRV'`), `rcode`
   * as its number (0-5 named, others `other`).
   */
  answered(transport: DnsTransport, type: number | string, rcode: number): void {
    const typeIndex = (typeof type === 'number' ? TYPE_INDEX.get(type) : TYPE_BY_NAME.get(type)) ?? TYPE_NAMES.length - 1;
    const rcodeIndex = rcode >= 0 && rcode < DNS_RCODES.length ? rcode : RCODE_NAMES.length - 1;
    const transportIndex = transport === 'udp' ? 0 : 1;
    this.queries[(transportIndex * TYPE_NAMES.length + typeIndex) * RCODE_NAMES.length + rcodeIndex]! += 1;
  }

  /** A UDP answer was truncated (TC set). */
  truncatedUdp(): void {
    this.truncated += 1;
  }

  /** Each non-zero count with its labels (scrape time). */
  *entries(): Generator<{ transport: string; type: string; rcode: string; count: number }> {
    for (let t = 0; t < DNS_TRANSPORTS.length; t++) {
      for (let q = 0; q < TYPE_NAMES.length; q++) {
        for (let r = 0; r < RCODE_NAMES.length; r++) {
          const count = this.queries[(t * TYPE_NAMES.length + q) * RCODE_NAMES.length + r]!;
          if (count > 0) yield { transport: DNS_TRANSPORTS[t]!, type: TYPE_NAMES[q]!, rcode: RCODE_NAMES[r]!, count };
        }
      }
    }
  }
}

/** xDS resource types by their type URL (Envoy's v3 names); any other URL is `other`. */
export const XDS_RESOURCE_TYPES: ReadonlyMap<string, string> = new Map([
  ['type.googleapis.com/envoy.config.listener.v3.Listener', 'listener'],
  ['type.googleapis.com/envoy.config.route.v3.RouteConfiguration', 'route'],
  ['type.googleapis.com/envoy.config.cluster.v3.Cluster', 'cluster'],
  ['type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment', 'endpoint'],
]);
const XDS_TYPE_NAMES: readonly string[] = [...XDS_RESOURCE_TYPES.values(), 'other'];
const XDS_TYPE_INDEX = new Map([...XDS_RESOURCE_TYPES.keys()].map((url, index) => [url, index]));

/** xDS responses the clients acknowledged (ACK) or refused (NACK, with an error detail), by resource type. */
export class XdsRecorder {
  readonly acks = new Float64Array(XDS_TYPE_NAMES.length);
  readonly nacks = new Float64Array(XDS_TYPE_NAMES.length);

  /** A client acknowledged a response of `typeUrl`. */
  ack(typeUrl: string): void {
    this.acks[XDS_TYPE_INDEX.get(typeUrl) ?? XDS_TYPE_NAMES.length - 1]! += 1;
  }

  /** A client refused a response of `typeUrl` (its request carried `error_detail`). */
  nack(typeUrl: string): void {
    this.nacks[XDS_TYPE_INDEX.get(typeUrl) ?? XDS_TYPE_NAMES.length - 1]! += 1;
  }

  /** Every resource type with its counts, zeros included (scrape time). */
  *entries(): Generator<{ type: string; acks: number; nacks: number }> {
    for (let i = 0; i < XDS_TYPE_NAMES.length; i++) yield { type: XDS_TYPE_NAMES[i]!, acks: this.acks[i]!, nacks: this.nacks[i]! };
  }
}
