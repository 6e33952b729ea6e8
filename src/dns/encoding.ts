import dnsPacket, { type Answer, type DecodedPacket, type OptAnswer, type Packet, type Question } from 'dns-packet';
import { RCODE, type RecordSet } from './records.js';

/**
 * DNS messages, encoded with dns-packet. An answer is encoded once (per view, question and
 * EDNS0 use) into a template; a query then costs a copy of the template with its own id, its
 * RD bit and its question name patched in (the only bytes that differ between two queries
 * with the same answer: dns-packet has no "re-encode just the header" call, and re-encoding
 * a 100-record answer per query is what the read layer exists to avoid), plus the UDP
 * truncation choice, whose variants are encoded once too.
 */

/** The largest DNS message at all (a TCP message's 16-bit length). */
export const MAX_MESSAGE_BYTES = 65_535;
/** The UDP size every client takes without EDNS0 (RFC 1035 4.2.1). */
export const CLASSIC_UDP_BYTES = 512;
const HEADER_BYTES = 12;
const QR_AA = 0x8000 | dnsPacket.AUTHORITATIVE_ANSWER;
/** Truncated variants kept per answer: sizes that clients announce are few (512, 1232, 4096...). */
const MAX_VARIANTS = 16;

/** The OPT record of an answer to an EDNS0 query (RFC 6891): our own UDP buffer size. */
export function optRecord(udpPayloadBytes: number, extendedRcode = 0): OptAnswer {
  return { type: 'OPT', name: '.', udpPayloadSize: udpPayloadBytes, extendedRcode, ednsVersion: 0, flags: 0, flag_do: false, options: [] };
}

function lengthOf(answers: Answer[]): number[] {
  return answers.map((answer) => dnsPacket.encodingLength({ answers: [answer] }) - HEADER_BYTES);
}

/** An answer encoded once; `forLimit` gives its bytes for a message size limit. */
export class PreparedAnswer {
  /** The whole answer (id 0, RD clear). */
  readonly full: Buffer;
  private readonly answerBytes: number[];
  private readonly additionalBytes: number[];
  /** Header, question, authority and OPT: what every variant carries. */
  private readonly baseBytes: number;
  private readonly variants = new Map<string, Buffer>();

  constructor(
    private readonly question: Question,
    private readonly records: RecordSet,
    private readonly opt: OptAnswer | null,
  ) {
    this.full = this.encode(records.answers, records.additionals, false);
    this.answerBytes = lengthOf(records.answers);
    this.additionalBytes = lengthOf(records.additionals);
    this.baseBytes = this.full.length - sum(this.answerBytes) - sum(this.additionalBytes);
  }

  /** The answer's response code (NOERROR, NXDOMAIN...). */
  get rcode(): number {
    return this.records.rcode;
  }

  /**
   * The bytes to send within `limitBytes`: the whole answer when it fits; else every answer
   * record and the additional records that fit (no TC: additional data may be dropped, RFC
   * 2181 9); else the answer records that fit, with TC set so the resolver retries over TCP.
   */
  forLimit(limitBytes: number): Buffer {
    if (this.full.length <= limitBytes) return this.full;
    let room = limitBytes - this.baseBytes;
    const answersTotal = sum(this.answerBytes);
    if (answersTotal <= room) {
      room -= answersTotal;
      return this.variant(`x${fitting(this.additionalBytes, room)}`, (count) => this.encode(this.records.answers, this.records.additionals.slice(0, count), false));
    }
    return this.variant(`a${fitting(this.answerBytes, room)}`, (count) => this.encode(this.records.answers.slice(0, count), [], true));
  }

  private variant(key: string, build: (count: number) => Buffer): Buffer {
    const known = this.variants.get(key);
    if (known) return known;
    const bytes = build(Number(key.slice(1)));
    if (this.variants.size < MAX_VARIANTS) this.variants.set(key, bytes);
    return bytes;
  }

  private encode(answers: Answer[], additionals: Answer[], truncated: boolean): Buffer {
    const packet: Packet = {
      type: 'response',
      id: 0,
      flags: QR_AA | (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) | this.records.rcode,
      questions: [this.question],
      answers,
      authorities: this.records.authorities,
      additionals: this.opt ? [...additionals, this.opt] : additionals,
    };
    return dnsPacket.encode(packet);
  }
}

function sum(values: number[]): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}

/** How many of the first `lengths` fit in `room` bytes. */
function fitting(lengths: number[], room: number): number {
  let count = 0;
  for (const length of lengths) {
    if (length > room) break;
    room -= length;
    count += 1;
  }
  return count;
}

/** The length of the query's question name on the wire (0 when it cannot be read plainly). */
export function questionNameBytes(query: Buffer): number {
  // Reading label lengths only (no decoding): dns-packet's decoder has already accepted the packet.
  let at = HEADER_BYTES;
  while (at < query.length) {
    const length = query[at]!;
    if (length === 0) return at + 1 - HEADER_BYTES;
    if (length > 63) return 0; // a compression pointer: keep our own spelling of the name
    at += length + 1;
  }
  return 0;
}

/**
 * A template made the answer to one query: the query's id and RD bit, and its question name
 * as the client spelled it (RFC 4343: case is preserved in the answer; resolvers that randomise
 * case, as unbound does, compare it) when its length is the one encoded. Answered as two
 * parts, sent together (UDP: one datagram from both; TCP: one write): a small head of its own
 * and the rest of the shared template, never copied or changed.
 */
export function answerTo(template: Buffer, query: Buffer, nameBytes: number, templateNameBytes: number): Buffer[] {
  const headBytes = HEADER_BYTES + (nameBytes > 0 && nameBytes === templateNameBytes ? nameBytes : 0);
  const head = Buffer.allocUnsafe(headBytes);
  template.copy(head, 0, 0, HEADER_BYTES);
  head[0] = query[0]!;
  head[1] = query[1]!;
  head[2] = head[2]! | (query[2]! & 0x01);
  if (headBytes > HEADER_BYTES) query.copy(head, HEADER_BYTES, HEADER_BYTES, headBytes);
  return [head, template.subarray(headBytes)];
}

/** An answer without records (REFUSED, FORMERR, NOTIMP, NXDOMAIN with its SOA...), encoded for this one query. */
export function plainAnswer(
  query: DecodedPacket | { id: number; flags: number },
  rcode: number,
  options: { question?: Question; authorities?: Answer[]; opt?: OptAnswer | null; truncated?: boolean } = {},
): Buffer {
  const rd = (query.flags ?? 0) & dnsPacket.RECURSION_DESIRED;
  const tc = options.truncated ? dnsPacket.TRUNCATED_RESPONSE : 0;
  return dnsPacket.encode({
    type: 'response',
    id: query.id ?? 0,
    flags: QR_AA | rd | tc | (rcode & 0xf),
    questions: options.question ? [options.question] : [],
    answers: [],
    authorities: options.authorities ?? [],
    additionals: options.opt ? [options.opt] : [],
  });
}

/** The UDP size limit for a query: 512 without EDNS0, else its announced size (at least 512) up to ours. */
export function udpLimit(opt: OptAnswer | undefined, maxUdpPayloadBytes: number): number {
  if (!opt) return CLASSIC_UDP_BYTES;
  return Math.min(maxUdpPayloadBytes, Math.max(CLASSIC_UDP_BYTES, opt.udpPayloadSize));
}

export { RCODE };
