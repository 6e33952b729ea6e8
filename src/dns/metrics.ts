import type { AdapterMetrics, AdapterRecorders, Outcome, OperationRecorder } from '../metrics/adapter-metrics.js';
import type { DnsTransport } from './responder.js';

/**
 * The DNS listener in the peer's adapter metrics (docs/metrics.md, "Protocols"): each query as
 * a request of its transport (`udp query`, `tcp query`) with its outcome, and as a count by
 * transport, query type and response code (`AdapterMetrics.dns`); UDP answers sent truncated;
 * the TCP connections as the held pool `connections`. The query type and the response code
 * are read from the bytes already there (the question of the query, the header of the
 * answer): no decode and no allocation per query.
 */

export const DNS_ADAPTER = 'dns';
/** The held pool of TCP connections (the `pool` label). */
export const CONNECTIONS_POOL_LABEL = 'connections';
const OPERATION: Readonly<Record<DnsTransport, string>> = { udp: 'udp query', tcp: 'tcp query' };
const HEADER_BYTES = 12;
/** Response codes: FORMERR 1, SERVFAIL 2, NOTIMP 4, REFUSED 5 (NOERROR 0 and NXDOMAIN 3 are answers). */
const OUTCOME_OF_RCODE: readonly Outcome[] = ['ok', 'bad_input', 'error', 'ok', 'bad_input', 'forbidden'];

/**
 * The QTYPE of a query's first question, read past its name's labels (a query's name is not
 * compressed); -1 when the message holds no whole question (counted as type `other`).
 */
export function queryTypeOf(message: Buffer): number {
  let offset = HEADER_BYTES;
  while (offset < message.length) {
    const length = message[offset]!;
    if (length === 0) return offset + 3 <= message.length ? message.readUInt16BE(offset + 1) : -1;
    if ((length & 0xc0) !== 0) return -1;
    offset += length + 1;
  }
  return -1;
}

export class DnsMetrics {
  readonly recorders: AdapterRecorders;
  private readonly operations: Readonly<Record<DnsTransport, OperationRecorder>>;

  constructor(private readonly metrics: AdapterMetrics) {
    this.recorders = metrics.adapter(DNS_ADAPTER, [OPERATION.udp, OPERATION.tcp]);
    this.operations = { udp: this.recorders.operation(OPERATION.udp), tcp: this.recorders.operation(OPERATION.tcp) };
  }

  /** The time to pass to `answered` or `dropped`. */
  start(transport: DnsTransport): number {
    return this.operations[transport].start();
  }

  /**
   * One query answered with `parts` (null: none sent, a message that was no query). `outcome`
   * overrides the one its response code says (a refusal for a source past its rate is `limited`).
   */
  answered(transport: DnsTransport, message: Buffer, parts: readonly Buffer[] | null, startedMs: number, outcome?: Outcome): void {
    if (parts === null || parts.length === 0 || parts[0]!.length < HEADER_BYTES) {
      if (outcome) this.operations[transport].done(outcome, startedMs);
      return;
    }
    // The answer's header: RCODE in the low bits of byte 3, TC in byte 2.
    const head = parts[0]!;
    const rcode = head[3]! & 0x0f;
    this.operations[transport].done(outcome ?? OUTCOME_OF_RCODE[rcode] ?? 'error', startedMs);
    this.metrics.dns.answered(transport, queryTypeOf(message), rcode);
    if (transport === 'udp' && (head[2]! & 0x02) !== 0) this.metrics.dns.truncatedUdp();
  }
}
