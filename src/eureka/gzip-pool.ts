import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);

/**
 * Most pieces of the Eureka documents compressed at once (`GzipPool`). libuv runs zlib's async
 * work on its pool of 4 threads, shared with file I/O (the data dir's log and snapshots): a
 * cold gzipped full fetch of 1,000,000 instances is 4,000 pieces, and queued all together
 * they held every plain piece in memory until its turn and kept the log's fsyncs waiting.
 */
export const GZIP_MAX_IN_FLIGHT = 4;

/** Bytes `gzipAll` joins into one gzip member at least (the last one may be smaller). */
export const GZIP_PIECE_BYTES = 256 * 1024;

/**
 * Compresses buffers on the thread pool, at most `maxInFlight` at a time. `gzip` waits for a
 * free place before it hands a buffer over, so a build that awaits it produces no faster
 * than the pool compresses (a gzip member per piece: members may be concatenated, RFC 1952).
 */
export class GzipPool {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly maxInFlight = GZIP_MAX_IN_FLIGHT) {}

  /** Pieces being compressed now (never more than `maxInFlight`). */
  get busy(): number {
    return this.inFlight;
  }

  /**
   * Waits for a free place, then starts compressing `plain`; the outer promise resolves once
   * the piece is handed over, the inner one with its gzip member. A builder awaits the outer
   * one only, so that it keeps building while earlier pieces compress.
   */
  async start(plain: Buffer): Promise<{ packed: Promise<Buffer> }> {
    while (this.inFlight >= this.maxInFlight) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.inFlight += 1;
    const packed = gzipAsync(plain).finally(() => {
      this.inFlight -= 1;
      this.waiting.shift()?.();
    });
    // The builder awaits `packed` only once every piece is handed over (Promise.all at the end):
    // a piece that failed before then must not count as an unhandled rejection, which ends the
    // process on Node 20. The failure still reaches whoever awaits `packed`.
    packed.catch(() => undefined);
    return { packed };
  }

  /**
   * `chunks` compressed, in order, through the pool: consecutive chunks are joined into pieces
   * of about `pieceBytes` first, since a delta is many small buffers (one per app and slice)
   * and a gzip member of a few bytes compresses nothing and adds its own 20.
   */
  async gzipAll(chunks: readonly Buffer[], pieceBytes = GZIP_PIECE_BYTES): Promise<Buffer[]> {
    const packed: Promise<Buffer>[] = [];
    let piece: Buffer[] = [];
    let bytes = 0;
    const send = async () => {
      if (piece.length === 0) return;
      packed.push((await this.start(piece.length === 1 ? piece[0]! : Buffer.concat(piece, bytes))).packed);
      piece = [];
      bytes = 0;
    };
    for (const chunk of chunks) {
      piece.push(chunk);
      bytes += chunk.length;
      if (bytes >= pieceBytes) await send();
    }
    await send();
    return Promise.all(packed);
  }
}
