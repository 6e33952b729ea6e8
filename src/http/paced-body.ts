import { Readable } from 'node:stream';

/**
 * Large shared bodies (a Eureka full fetch of 100,000 instances is 80 MB) written to many
 * sockets at once without holding the event loop.
 *
 * A socket write copies into the kernel at once, as much as the socket takes: on loopback, and
 * on any fast link with large buffers, that is several MB per socket before the first write
 * blocks. Streamed with `Readable.from`, a body's chunks follow each other in microtasks, so a
 * socket is filled in one turn of the event loop: with 8 fetches of 100,000 instances at once
 * a heartbeat waited 20 to 35 ms, past the 20 ms target, and 7 to 9 ms once paced
 * (heartbeat p99 of bench/read-scale.ts --only=fullfetch; bench/loop-probe.cjs shows the
 * stalls from inside the peer). Node's streams have no
 * notion of a budget shared by many streams, and no library adds one, hence this module.
 *
 * Here every paced body waits for its turn in one queue, and each turn of the event loop hands
 * out at most `bytesPerTurn` in all, in pieces of at most `pieceBytes`, round robin: whatever
 * the number of fetches, a turn copies about 1 MB, and heartbeats are answered between turns.
 * A body still only moves when its socket takes more (backpressure, as with any stream), so a
 * slow client costs its own socket buffer, not the others' turns.
 */

/** What one turn of the event loop hands out, across every body being sent. */
export const BYTES_PER_TURN = 1 << 20;
/** The largest piece of a chunk pushed at once (a chunk is split, without copying, past it). */
export const PIECE_BYTES = 256 * 1024;

export interface PacerOptions {
  bytesPerTurn: number;
  pieceBytes: number;
  /** Runs a turn later: the next turn of the event loop (tests step it by hand). */
  schedule: (turn: () => void) => void;
}

/** One queue of bodies waiting to send, shared by every body that uses it. */
export class Pacer {
  /** Bodies that asked for data, in the order they asked (a Set keeps insertion order). */
  private readonly waiting = new Set<PacedBody>();
  private scheduled = false;
  /** Bytes handed out by the last turn (for tests and figures). */
  lastTurnBytes = 0;

  constructor(private readonly options: PacerOptions) {}

  get pieceBytes(): number {
    return this.options.pieceBytes;
  }

  /** `body` wants its next piece: it gets it in a coming turn. */
  want(body: PacedBody): void {
    this.waiting.add(body);
    if (this.scheduled) return;
    this.scheduled = true;
    this.options.schedule(() => this.turn());
  }

  /** Bodies waiting for a turn. */
  get queued(): number {
    return this.waiting.size;
  }

  private turn(): void {
    this.scheduled = false;
    let spent = 0;
    // A body that is given a piece and asks again at once (its socket took it) goes to the
    // back of the queue: the turn reaches it again only after every other body waiting.
    for (const body of this.waiting) {
      if (spent >= this.options.bytesPerTurn) break;
      this.waiting.delete(body);
      spent += body.pushNext();
    }
    this.lastTurnBytes = spent;
    if (this.waiting.size > 0 && !this.scheduled) {
      this.scheduled = true;
      this.options.schedule(() => this.turn());
    }
  }
}

/** The process's pacer: one budget for every paced body of every listener. */
export const sharedPacer = new Pacer({ bytesPerTurn: BYTES_PER_TURN, pieceBytes: PIECE_BYTES, schedule: (turn) => setImmediate(turn) });

export interface PacedBodyOptions {
  /**
   * Gather runs of small chunks into one piece (a copy of at most the piece size) instead of
   * pushing each alone. A body gets one piece per turn (its stream asks for the next one in a
   * later tick), so a body of thousands of chunks of a few hundred bytes (Prometheus targets
   * filtered by zone, one part per instance) would take a turn per chunk and a socket write
   * per chunk. Chunks of the piece size or more are still sent as views (only the short
   * rest of one, after its full pieces, may be gathered with the small chunks that follow).
   * Off by default: the Eureka documents are big slices and send as they always did.
   */
  gatherSmallChunks?: boolean;
}

/** A readable body of shared chunks (never copied, unless small ones are gathered), sent at the pacer's rate. */
export class PacedBody extends Readable {
  private index = 0;
  private offset = 0;
  private readonly gather: boolean;

  constructor(
    private readonly chunks: readonly Buffer[],
    private readonly pacer: Pacer = sharedPacer,
    options: PacedBodyOptions = {},
  ) {
    // No read-ahead: a piece is pushed only when the consumer asks for more.
    super({ highWaterMark: 0 });
    this.gather = options.gatherSmallChunks ?? false;
  }

  override _read(): void {
    this.pacer.want(this);
  }

  /** Pushes the next piece, or the end; the bytes pushed. Called by the pacer only. */
  pushNext(): number {
    if (this.destroyed) return 0;
    while (this.index < this.chunks.length && this.offset >= this.chunks[this.index]!.length) {
      this.index += 1;
      this.offset = 0;
    }
    const chunk = this.chunks[this.index];
    if (chunk === undefined) {
      this.push(null);
      return 0;
    }
    const pieceBytes = this.pacer.pieceBytes;
    if (this.gather && chunk.length - this.offset < pieceBytes) {
      const piece = this.gathered(chunk, pieceBytes);
      this.push(piece);
      return piece.length;
    }
    const piece = chunk.subarray(this.offset, this.offset + pieceBytes);
    this.offset += piece.length;
    this.push(piece);
    return piece.length;
  }

  /** The rest of `chunk` and the whole chunks after it, while they fit in one piece; moves past them. */
  private gathered(chunk: Buffer, pieceBytes: number): Buffer {
    const parts = [this.offset === 0 ? chunk : chunk.subarray(this.offset)];
    let total = parts[0]!.length;
    this.index += 1;
    this.offset = 0;
    while (this.index < this.chunks.length && total + this.chunks[this.index]!.length <= pieceBytes) {
      const next = this.chunks[this.index]!;
      parts.push(next);
      total += next.length;
      this.index += 1;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
  }
}
