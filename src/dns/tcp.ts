import type { Clock, TimerHandle } from '../clock/clock.js';

/**
 * One DNS-over-TCP connection (RFC 1035 4.2.2, RFC 7766): length-prefixed queries, pipelined,
 * answered in order, with the work and memory a client can make the peer spend bounded:
 * - backpressure: while the socket's send buffer is full (`write` answered false) no further
 *   query is answered and the socket is not read, so a client that never reads makes the peer
 *   queue at most one answer past the buffer, not one per query it sent (one `drain` listener
 *   at a time);
 * - a cap on the bytes queued for the client (`maxQueuedBytes`): past it the connection is cut;
 * - answers are written as a small head of their own and the shared encoded answer (no copy
 *   of the up to 64 KB answer per query);
 * - deadlines that sending a byte now and then does not reset: a query must be whole within
 *   `queryDeadlineMs` of its first byte, a connection answers a whole query at least every
 *   `idleMs`, and lives at most `maxLifeMs` (clients reconnect and resend what was unanswered,
 *   RFC 7766 6.2.4);
 * - bytes are gathered in a list and joined once per query, so a query sent one byte at a
 *   time costs linear work, not a join per byte.
 */

/** The part of a net.Socket a connection uses (tests hand in their own). */
export interface DnsTcpSocket {
  readonly writableLength: number;
  write(chunk: Buffer): boolean;
  cork(): void;
  uncork(): void;
  pause(): unknown;
  resume(): unknown;
  destroy(): void;
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  on(event: 'close' | 'error', listener: () => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

export interface DnsTcpLimits {
  /** A query must be whole within this long of its first byte. */
  queryDeadlineMs: number;
  /** Longest time without a whole query (from the connection's start or the last query). */
  idleMs: number;
  /** Longest life of a connection. */
  maxLifeMs: number;
  /** Answer bytes queued for the client at most; past them the connection is cut. */
  maxQueuedBytes: number;
}

/** Defaults (docs/dns.md): seconds, as RFC 7766 suggests; a queue of a few 64 KB answers. */
export const DNS_TCP_LIMITS: DnsTcpLimits = { queryDeadlineMs: 5_000, idleMs: 10_000, maxLifeMs: 120_000, maxQueuedBytes: 256 * 1024 };

/**
 * Answers one query (its bytes without the length prefix) as the parts to send, or null for
 * none. `framed` is the query with its two length bytes (dns-packet's streamDecode reads it).
 */
export type TcpAnswerer = (message: Buffer, framed: Buffer) => Buffer[] | null;

const LENGTH_BYTES = 2;

export class DnsTcpConnection {
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;
  /** When the first byte of the query being gathered arrived; null with nothing gathered. */
  private partialSinceMs: number | null = null;
  private lastQueryAtMs: number;
  private readonly openedAtMs: number;
  /** Waiting for `drain`: nothing is answered or read meanwhile. */
  private blocked = false;
  private closed = false;
  private timer: TimerHandle | null = null;
  private timerAtMs = Infinity;

  constructor(
    private readonly socket: DnsTcpSocket,
    private readonly answer: TcpAnswerer,
    private readonly clock: Clock,
    private readonly limits: DnsTcpLimits = DNS_TCP_LIMITS,
    /** Told of an answer that threw; the connection is then closed (nothing a client sends stops the listener). */
    private readonly failed: (error: unknown) => void = () => {},
  ) {
    this.openedAtMs = clock.nowMs();
    this.lastQueryAtMs = this.openedAtMs;
    socket.on('data', (chunk) => this.onData(chunk));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.onClose());
    this.arm();
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    if (this.bufferedBytes === 0) this.partialSinceMs = this.clock.nowMs();
    this.chunks.push(chunk);
    this.bufferedBytes += chunk.length;
    this.work();
  }

  /** Answers every whole query gathered, until the socket's buffer is full. */
  private work(): void {
    while (!this.blocked && !this.closed) {
      const framed = this.nextQuery();
      if (!framed) break;
      this.lastQueryAtMs = this.clock.nowMs();
      let parts: Buffer[] | null;
      try {
        parts = this.answer(framed.subarray(LENGTH_BYTES), framed);
      } catch (error) {
        this.failed(error);
        this.close();
        return;
      }
      if (parts) this.send(parts);
    }
    this.arm();
  }

  /** The next whole framed query, taken off the gathered bytes; null when none is whole yet. */
  private nextQuery(): Buffer | null {
    if (this.bufferedBytes < LENGTH_BYTES) return null;
    if (this.chunks[0]!.length < LENGTH_BYTES) this.join();
    const needed = LENGTH_BYTES + this.chunks[0]!.readUInt16BE(0);
    if (this.bufferedBytes < needed) return null;
    if (this.chunks[0]!.length < needed) this.join();
    const first = this.chunks[0]!;
    const framed = first.subarray(0, needed);
    if (first.length === needed) this.chunks.shift();
    else this.chunks[0] = first.subarray(needed);
    this.bufferedBytes -= needed;
    // What is left is the start of the next query, which arrived by now.
    this.partialSinceMs = this.bufferedBytes > 0 ? this.clock.nowMs() : null;
    return framed;
  }

  /** One buffer of everything gathered: done at most twice per query (its length, then its whole). */
  private join(): void {
    this.chunks = [Buffer.concat(this.chunks, this.bufferedBytes)];
  }

  private send(parts: Buffer[]): void {
    const total = parts.reduce((sum, part) => sum + part.length, 0);
    // The length prefix joins the answer's own small head; the shared rest is written as it is
    // (a corked socket sends the parts in one writev, without copying them).
    const head = Buffer.allocUnsafe(LENGTH_BYTES + parts[0]!.length);
    head.writeUInt16BE(total, 0);
    parts[0]!.copy(head, LENGTH_BYTES);
    this.socket.cork();
    let room = this.socket.write(head);
    for (let i = 1; i < parts.length; i++) room = this.socket.write(parts[i]!) && room;
    this.socket.uncork();
    if (this.socket.writableLength > this.limits.maxQueuedBytes) {
      this.close();
      return;
    }
    if (!room) {
      this.blocked = true;
      this.socket.pause();
      this.socket.once('drain', () => this.onDrain());
    }
  }

  private onDrain(): void {
    if (this.closed) return;
    this.blocked = false;
    this.work();
    if (!this.blocked && !this.closed) this.socket.resume();
  }

  /** When the connection must end: the earliest of its deadlines. */
  private deadlineMs(): number {
    const { queryDeadlineMs, idleMs, maxLifeMs } = this.limits;
    const partial = this.partialSinceMs === null ? Infinity : this.partialSinceMs + queryDeadlineMs;
    return Math.min(this.openedAtMs + maxLifeMs, this.lastQueryAtMs + idleMs, partial);
  }

  /**
   * One timer per connection, set for the earliest deadline; when it fires early (a query came
   * meanwhile and moved the deadline) it is set again. Re-set on data only when the deadline
   * came nearer, so a stream of queries costs no timer churn.
   */
  private arm(): void {
    if (this.closed) return;
    const atMs = this.deadlineMs();
    if (atMs >= this.timerAtMs && this.timer) return;
    this.timer?.cancel();
    this.timerAtMs = atMs;
    this.timer = this.clock.setTimeout(() => this.onTimer(), Math.max(0, atMs - this.clock.nowMs()));
  }

  private onTimer(): void {
    this.timer = null;
    this.timerAtMs = Infinity;
    if (this.clock.nowMs() >= this.deadlineMs()) this.close();
    else this.arm();
  }

  private close(): void {
    if (this.closed) return;
    this.socket.destroy();
    this.onClose();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    this.chunks = [];
    this.bufferedBytes = 0;
  }
}
