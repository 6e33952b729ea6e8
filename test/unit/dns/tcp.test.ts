import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { DNS_TCP_LIMITS, DnsTcpConnection, type DnsTcpSocket } from '../../../src/dns/tcp.js';
import { FakeClock } from '../../support/fake-clock.js';

/**
 * A socket as net.Socket behaves for the connection: `write` queues and answers false once the
 * queue reaches the high-water mark; the peer reads only when the test says so (`read`), and
 * `drain` comes when a read empties the queue after a write answered false.
 */
class FakeSocket extends EventEmitter implements DnsTcpSocket {
  writableLength = 0;
  paused = false;
  destroyed = false;
  writes: Buffer[] = [];
  /** Most bytes ever queued at once. */
  peakQueuedBytes = 0;
  private needDrain = false;

  constructor(private readonly highWaterMark = 16 * 1024) {
    super();
  }

  write(chunk: Buffer): boolean {
    this.writes.push(chunk);
    this.writableLength += chunk.length;
    this.peakQueuedBytes = Math.max(this.peakQueuedBytes, this.writableLength);
    const room = this.writableLength < this.highWaterMark;
    if (!room) this.needDrain = true;
    return room;
  }
  cork(): void {}
  uncork(): void {}
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
  /** The client sends bytes; a paused socket holds them (as the kernel would) until resumed. */
  send(bytes: Buffer): void {
    this.emit('data', bytes);
  }
  /** The client reads everything queued. */
  read(): void {
    this.writableLength = 0;
    if (this.needDrain) {
      this.needDrain = false;
      this.emit('drain');
    }
  }
}

/** A framed "query": two length bytes and `bytes` bytes, the first two of them its number. */
function framed(index: number, bytes = 40): Buffer {
  const out = Buffer.alloc(2 + bytes);
  out.writeUInt16BE(bytes, 0);
  out.writeUInt16BE(index, 2);
  return out;
}

/** An answerer that answers each query with a small head and one shared 64 KB tail, as the responder does. */
function bigAnswers() {
  const shared = Buffer.alloc(65_000, 7);
  const seen: number[] = [];
  const answer = (message: Buffer) => {
    seen.push(message.readUInt16BE(0));
    return [Buffer.from(message.subarray(0, 12)), shared];
  };
  return { shared, seen, answer };
}

describe('DNS over TCP: backpressure', () => {
  it('a client that sends 1,600 pipelined queries and never reads gets one answer past the buffer, one drain listener, and is cut at the query deadline', async () => {
    const clock = new FakeClock();
    const socket = new FakeSocket();
    const { seen, answer } = bigAnswers();
    new DnsTcpConnection(socket, answer, clock);
    const queries = Buffer.concat(Array.from({ length: 1_600 }, (_, i) => framed(i)));
    // As the kernel hands them over: 64 KB at a time, while the socket is not paused.
    for (let at = 0; at < queries.length && !socket.paused; at += 65_536) socket.send(queries.subarray(at, at + 65_536));
    expect(seen).toEqual([0]);
    expect(socket.paused).toBe(true);
    expect(socket.listenerCount('drain')).toBe(1);
    expect(socket.peakQueuedBytes).toBeLessThanOrEqual(16 * 1024 + 65_014);
    // Nothing answered while it does not read; the queries it sent wait unanswered, so it is
    // cut at the query deadline.
    await clock.advance(DNS_TCP_LIMITS.queryDeadlineMs - 1);
    expect(socket.destroyed).toBe(false);
    await clock.advance(1);
    expect(socket.destroyed).toBe(true);
    expect(seen).toHaveLength(1);
  });

  it('answers every pipelined query in order as the client reads, with at most one drain listener at a time', () => {
    const clock = new FakeClock();
    const socket = new FakeSocket();
    const { seen, answer, shared } = bigAnswers();
    new DnsTcpConnection(socket, answer, clock);
    socket.send(Buffer.concat(Array.from({ length: 200 }, (_, i) => framed(i))));
    let reads = 0;
    while (socket.paused && reads < 1_000) {
      expect(socket.listenerCount('drain')).toBe(1);
      socket.read();
      reads += 1;
    }
    expect(seen).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(socket.listenerCount('drain')).toBe(0);
    // Each answer: a head with the length prefix, then the shared encoded tail itself (not a copy).
    const tails = socket.writes.filter((write) => write.length === shared.length);
    expect(tails).toHaveLength(200);
    expect(tails.every((tail) => tail === shared)).toBe(true);
    const head = socket.writes[0]!;
    expect(head.readUInt16BE(0)).toBe(12 + shared.length);
  });

  it('cuts a connection whose queued answers pass maxQueuedBytes even when writes never say the buffer is full', () => {
    const clock = new FakeClock();
    const socket = new FakeSocket(Number.MAX_SAFE_INTEGER);
    const { seen, answer } = bigAnswers();
    new DnsTcpConnection(socket, answer, clock);
    socket.send(Buffer.concat(Array.from({ length: 100 }, (_, i) => framed(i))));
    expect(socket.destroyed).toBe(true);
    expect(seen.length).toBe(Math.ceil(DNS_TCP_LIMITS.maxQueuedBytes / 65_014));
  });
});

describe('DNS over TCP: deadlines', () => {
  it('a query sent one byte every 4 s is cut at the query deadline, whatever the bytes reset', async () => {
    const clock = new FakeClock();
    const socket = new FakeSocket();
    const { seen, answer } = bigAnswers();
    new DnsTcpConnection(socket, answer, clock);
    const query = framed(1);
    let sent = 0;
    while (!socket.destroyed && sent < query.length) {
      socket.send(query.subarray(sent, sent + 1));
      sent += 1;
      await clock.advance(4_000);
    }
    expect(socket.destroyed).toBe(true);
    expect(sent).toBe(2); // bytes at 0 s and 4 s; the query deadline (5 s from the first) passed before a third
    expect(seen).toEqual([]);
  });

  it('closes a connection that sends nothing after idleMs, and one that keeps querying after maxLifeMs', async () => {
    const clock = new FakeClock();
    const idle = new FakeSocket();
    new DnsTcpConnection(idle, bigAnswers().answer, clock);
    await clock.advance(DNS_TCP_LIMITS.idleMs);
    expect(idle.destroyed).toBe(true);

    const busy = new FakeSocket();
    const { seen, answer } = bigAnswers();
    new DnsTcpConnection(busy, answer, clock);
    let elapsedMs = 0;
    while (!busy.destroyed && elapsedMs < 2 * DNS_TCP_LIMITS.maxLifeMs) {
      busy.send(framed(seen.length));
      busy.read();
      await clock.advance(4_000);
      elapsedMs += 4_000;
    }
    expect(busy.destroyed).toBe(true);
    expect(elapsedMs).toBeGreaterThanOrEqual(DNS_TCP_LIMITS.maxLifeMs);
    expect(elapsedMs).toBeLessThan(DNS_TCP_LIMITS.maxLifeMs + 4_000);
    expect(clock.pendingTimers).toBe(0);
  });

  it('gathers a query sent one byte at a time and answers it, and queries split across chunks', () => {
    const clock = new FakeClock();
    const socket = new FakeSocket();
    const { seen, answer } = bigAnswers();
    new DnsTcpConnection(socket, answer, clock);
    const big = framed(9, 60_000);
    for (let i = 0; i < big.length; i++) socket.send(big.subarray(i, i + 1));
    socket.read();
    const two = Buffer.concat([framed(10), framed(11)]);
    socket.send(two.subarray(0, 1));
    socket.send(two.subarray(1, 30));
    socket.send(two.subarray(30));
    socket.read();
    expect(seen).toEqual([9, 10, 11]);
  });

  it('closes the connection and reports when the answerer throws', () => {
    const clock = new FakeClock();
    const socket = new FakeSocket();
    const failures: unknown[] = [];
    new DnsTcpConnection(socket, () => { throw new Error('boom'); }, clock, DNS_TCP_LIMITS, (error) => failures.push(error));
    socket.send(framed(1));
    expect(socket.destroyed).toBe(true);
    expect(failures).toHaveLength(1);
  });
});
