import dnsPacket, { type Answer, type DecodedPacket, type OptAnswer, type Question } from 'dns-packet';
import type { DnsConfig } from './declaration.js';
import type { ServiceView, ServiceViews } from '../views/service-views.js';
import { answerTo, MAX_MESSAGE_BYTES, optRecord, plainAnswer, PreparedAnswer, questionNameBytes, udpLimit } from './encoding.js';
import { lowerAscii, nameParser, type Lookup, type NameParser, type ServiceLookup } from './names.js';
import { RCODE, serviceRecords, soaRecord, type RecordContext } from './records.js';

/**
 * Answers DNS queries (bytes in, bytes out) from the read layer; no sockets (listener.ts has
 * them). A service name's answer is encoded once per view and question (`views.encoding`),
 * so a query costs its decode, a few map lookups and a small head before the shared encoded
 * answer; a query whose bytes (after the id) were seen before skips the decode as well.
 */

export interface ResponderComponents {
  views: ServiceViews;
  /** The region of a lower-cased zone from the peers' configuration, when a peer is in that zone. */
  regionOfZone(zone: string): string | undefined;
}

export type DnsTransport = 'udp' | 'tcp';

/** An answer in the parts it is sent from (see encoding.ts answerTo); one buffer for a plain answer. */
export interface DnsReply {
  parts: Buffer[];
}

/** The reply as one buffer (TCP framing, tests). */
export function joined(reply: DnsReply): Buffer {
  return reply.parts.length === 1 ? reply.parts[0]! : Buffer.concat(reply.parts);
}

/** RFC 6891 6.1.3: an EDNS version other than 0 is answered BADVERS (16: extended 1, header 0). */
const BADVERS_EXTENDED = 1;
const ANSWERED_TYPES = new Set(['A', 'AAAA', 'SRV', 'TXT', 'ANY']);
/** Queries remembered by their bytes (see `Remembered`); the memo is emptied when it grows past this. */
const MAX_REMEMBERED = 4_096;

/**
 * A service query as its bytes after the id (flags, question as spelled, EDNS0 size) and its
 * transport: the view and encoded answer it came to. A query with the same bytes is answered
 * from here while the view is still current, without decoding or parsing it again.
 */
interface Remembered {
  namespace: string;
  service: string;
  view: ServiceView;
  prepared: PreparedAnswer;
  limit: number;
}

/**
 * A query has one question, no answer or authority records, and an OPT (maybe a TSIG) at
 * most. Checked on the header's counts before decoding: dns-packet allocates what the counts
 * say first, so 65,535 of each would cost milliseconds per packet.
 */
function plausibleCounts(message: Buffer): boolean {
  return message.readUInt16BE(4) === 1 && message.readUInt16BE(6) === 0 && message.readUInt16BE(8) === 0 && message.readUInt16BE(10) <= 2;
}

/**
 * REFUSED for a query from a source that may not ask (listener.ts): its question echoed,
 * nothing else, so never bigger than the query. Not a plausible query: nothing (dropped).
 */
export function refusal(message: Buffer): Buffer[] | null {
  return echo(message, RCODE.REFUSED, false);
}

/**
 * An empty truncated answer (TC, no records) for a UDP query past its source's rate: never
 * bigger than the query, and tells a real resolver to ask again over TCP.
 */
export function truncation(message: Buffer): Buffer[] | null {
  return echo(message, RCODE.NOERROR, true);
}

function echo(message: Buffer, rcode: number, truncated: boolean): Buffer[] | null {
  if (message.length < 12 || (message[2]! & 0x80) !== 0 || !plausibleCounts(message)) return null;
  try {
    const query = dnsPacket.decode(message);
    return [plainAnswer(query, rcode, { question: query.questions![0]!, truncated })];
  } catch {
    return null;
  }
}

/** QTYPE ANY (255), which dns-packet's RecordType leaves out. */
function isAny(question: Question): boolean {
  return (question.type as string) === 'ANY';
}

/** The zones and groups (lower-cased) of a view's UP instances: what qualifiers may name. */
function qualifiersOf(view: ServiceView): { zones: Set<string>; groups: Set<string> } {
  const zones = new Set<string>();
  const groups = new Set<string>();
  for (const instance of view.instances) {
    if (instance.status !== 'UP') continue;
    if (instance.zone !== '') zones.add(instance.zone.toLowerCase());
    groups.add(instance.group.toLowerCase());
  }
  return { zones, groups };
}

export class DnsResponder {
  private readonly parser: NameParser;
  private readonly context: RecordContext;
  /** The OPT record of every answer to an EDNS0 query (RFC 6891): our UDP buffer size. */
  private readonly opt: OptAnswer;
  private readonly remembered = new Map<string, Remembered>();

  constructor(
    private readonly components: ResponderComponents,
    private readonly config: DnsConfig,
  ) {
    this.parser = nameParser({ domain: config.domain, namespaces: config.namespaces });
    this.opt = optRecord(config.maxUdpPayloadBytes);
    this.context = { domain: config.domain, ttlSeconds: config.ttlSeconds, regionOfZone: (zone) => components.regionOfZone(zone) };
  }

  /**
   * The answer to one message, or null when none is due: a message that is no query (a
   * response, or too short to carry an id) is dropped. A query that cannot be decoded answers
   * FORMERR; nothing a client sends throws out of here. `decode` is how the message is decoded
   * (TCP passes dns-packet's streamDecode of the framed message), after the header checks.
   */
  answer(message: Buffer, transport: DnsTransport, decode: (message: Buffer) => DecodedPacket = dnsPacket.decode): DnsReply | null {
    if (message.length < 12) return null;
    const key = `${transport}${message.toString('latin1', 2)}`;
    const known = this.remembered.get(key);
    if (known && this.components.views.get(known.namespace, known.service) === known.view) return this.send(known.prepared, message, known.limit);
    if ((message[2]! & 0x80) !== 0) return null; // a response: never answer one
    const header = { id: message.readUInt16BE(0), flags: message.readUInt16BE(2) & 0x7fff };
    if (((header.flags >> 11) & 0xf) !== 0) return this.plain(header, RCODE.NOTIMP); // opcode: QUERY only
    if (!plausibleCounts(message)) return this.plain(header, RCODE.FORMERR);
    let query: DecodedPacket;
    try {
      query = decode(message);
    } catch {
      return this.plain(header, RCODE.FORMERR);
    }
    if (query.type !== 'query') return null;
    const opt = query.additionals?.find((record): record is OptAnswer => record.type === 'OPT');
    const reply = opt ? this.opt : null;
    const question = query.questions?.[0];
    if (!question) return this.plain(query, RCODE.FORMERR, { opt: reply });
    if (opt && opt.ednsVersion !== 0) return this.plain(query, RCODE.NOERROR, { question, opt: optRecord(this.config.maxUdpPayloadBytes, BADVERS_EXTENDED) });
    if (question.class !== 'IN' && question.class !== 'ANY') return this.plain(query, RCODE.REFUSED, { question, opt: reply });
    const limit = transport === 'udp' ? udpLimit(opt, this.config.maxUdpPayloadBytes) : MAX_MESSAGE_BYTES;

    const lower = lowerAscii(question.name);
    const lookup: Lookup = lower === null ? { kind: 'unknown' } : this.parser.parse(lower);
    switch (lookup.kind) {
      case 'outside':
        return this.plain(query, RCODE.REFUSED, { question, opt: reply });
      case 'unknown':
        return this.plain(query, RCODE.NXDOMAIN, { question, opt: reply, authorities: [this.soa()] });
      case 'apex': {
        const answers: Answer[] = question.type === 'SOA' || isAny(question) ? [this.soa()] : [];
        return this.send(new PreparedAnswer(this.question(question, lower!), { rcode: RCODE.NOERROR, answers, authorities: answers.length ? [] : [this.soa()], additionals: [] }, reply), message, limit);
      }
      case 'address': {
        const match = (question.type === 'A' && lookup.family === 4) || (question.type === 'AAAA' && lookup.family === 6) || isAny(question);
        const answers: Answer[] = match ? [{ type: lookup.family === 4 ? 'A' : 'AAAA', name: lower!, ttl: this.config.ttlSeconds, data: lookup.address }] : [];
        return this.send(new PreparedAnswer(this.question(question, lower!), { rcode: RCODE.NOERROR, answers, authorities: match ? [] : [this.soa()], additionals: [] }, reply), message, limit);
      }
      case 'service':
        return this.service(query, question, lower!, lookup, reply, message, limit, key);
    }
  }

  private service(query: DecodedPacket, question: Question, lower: string, lookup: ServiceLookup, reply: OptAnswer | null, message: Buffer, limit: number, key: string) {
    const views = this.components.views;
    const nxdomain = () => this.plain(query, RCODE.NXDOMAIN, { question, opt: reply, authorities: [this.soa()] });
    // The store matches service names in any case (RFC 4343 and the registry's own rule).
    const view = views.get(lookup.namespace, lookup.service);
    if (view.served.length === 0) return nxdomain();
    // Qualifiers naming no zone or group of the service answer NXDOMAIN before anything is
    // encoded: only names that exist get an encoding of their own.
    const known = views.encoding(view, 'dns:qualifiers', qualifiersOf);
    if (lookup.group !== null && !known.groups.has(lookup.group)) return nxdomain();
    if (lookup.zone !== null && !known.zones.has(lookup.zone) && this.components.regionOfZone(lookup.zone) === undefined) return nxdomain();
    if (!ANSWERED_TYPES.has(question.type)) {
      // Another type (MX, CNAME...): NODATA when the name exists, encoded per query (rare).
      const exists = views.encoding(view, `dns:ANY:plain:${lower}`, (current) => this.prepare(question, lower, 'ANY', current, lookup, null)).rcode === RCODE.NOERROR;
      return this.plain(query, exists ? RCODE.NOERROR : RCODE.NXDOMAIN, { question, opt: reply, authorities: [this.soa()] });
    }
    const name = `dns:${question.type}:${question.class}:${reply ? 'edns' : 'plain'}:${lower}`;
    const prepared = views.encoding(view, name, (current) => this.prepare(question, lower, question.type, current, lookup, reply));
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
    this.remembered.set(key, { namespace: lookup.namespace, service: view.service, view, prepared, limit });
    return this.send(prepared, message, limit);
  }

  private prepare(question: Question, lower: string, type: string, view: ServiceView, lookup: ServiceLookup, reply: OptAnswer | null): PreparedAnswer {
    return new PreparedAnswer({ name: lower, type: question.type, class: question.class }, serviceRecords(type, lower, view, lookup, this.context), reply);
  }

  private send(prepared: PreparedAnswer, message: Buffer, limit: number): DnsReply {
    const template = prepared.forLimit(limit);
    return { parts: answerTo(template, message, questionNameBytes(message), questionNameBytes(template)) };
  }

  private plain(query: DecodedPacket | { id: number; flags: number }, rcode: number, options: Parameters<typeof plainAnswer>[2] = {}): DnsReply {
    return { parts: [plainAnswer(query, rcode, options)] };
  }

  private question(question: Question, lower: string): Question {
    return { name: lower, type: question.type, class: question.class };
  }

  private soa(): Answer {
    return soaRecord(this.context, this.components.views.revision);
  }
}
