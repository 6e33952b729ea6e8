import type { Clock } from '../clock/clock.js';
import { RegistryError } from '../errors.js';
import type { LeaseView } from '../registry/visibility.js';
import type { InstanceStore } from '../registry/store.js';
import type { PeerDescriptor } from '../transport/peer-calls.js';
import { encodeEndFrame, encodeStartFrame, RecordFrameWriter } from './snapshot-frames.js';
import { toWireRecord } from './wire.js';

/**
 * Snapshot streams one peer serves at once. Each costs the serving peer the encoding of its
 * whole registry (4.2-5.9 CPU-s at 1,000,000 instances, bench/snapshot-join.ts, one stream): four
 * at once are a few cores' worth of seconds, still spread over turns of the event loop; a fifth
 * is answered `REG_ERR_SNAPSHOT_BUSY` and tries another peer, or later.
 */
export const SNAPSHOT_STREAMS_MAX = 4;
/**
 * Longest a stream may run, from its first frame. Past it the serving peer ends it without its
 * end frame (the joining peer sees a stream cut short and asks again): a reader that stalls,
 * or reads a few bytes a second, holds a slot for at most this long.
 */
export const SNAPSHOT_STREAM_MAX_DURATION_MS = 10 * 60_000;
/** Seconds a joining peer answered `REG_ERR_SNAPSHOT_BUSY` is told to wait (`Retry-After`). */
const BUSY_RETRY_AFTER_SECONDS = 5;

export interface SnapshotStreamComponents {
  store: InstanceStore;
  clock: Clock;
  /** The lease view records go on the wire with (read again for every frame: time passes). */
  leaseView(): LeaseView;
  /** The peers this peer knows, sent in the start frame (the joining peer learns the cluster). */
  members(): PeerDescriptor[];
  /** Whether this peer's registry is settled (ready, or not holding a known-partial one), sent in the start frame. */
  settled(): boolean;
  /** Resolves on a later turn of the event loop (`setImmediate`, given by the node: the core owns no timer). */
  nextTurn(): Promise<void>;
}

/**
 * The serving side of the start-up snapshot stream: the whole store as NDJSON frames
 * (snapshot-frames.ts), one frame at a time. Nothing is built ahead: a frame is encoded when
 * the reader asks for the next one (an async generator behind a stream with backpressure, so a
 * slow reader holds at most a frame or two in memory), and after each frame the generator
 * waits for a later turn of the event loop, so heartbeats, probes and replication batches run
 * between frames. The store is walked with its live iterator: a record removed before its turn
 * is left out, one added meanwhile may or may not be sent (replication and the anti-entropy
 * round that ends every start-up sync bring it). Tombstones are sent, as in the pages.
 */
export class SnapshotStreams {
  private readonly slots = new Map<number, { deadlineMs: number }>();
  private nextSlot = 0;

  constructor(private readonly components: SnapshotStreamComponents) {}

  /** Streams being served now. */
  get active(): number {
    this.forgetExpired(this.components.clock.nowMs());
    return this.slots.size;
  }

  /**
   * Takes one of the `SNAPSHOT_STREAMS_MAX` slots, or throws `REG_ERR_SNAPSHOT_BUSY` (503) when
   * all are taken, and returns the stream's lines. The slot is freed when the stream ends,
   * fails or is abandoned by its reader (the generator's `return`), or at the latest when its
   * time cap has passed.
   */
  open(): AsyncGenerator<string> {
    const nowMs = this.components.clock.nowMs();
    this.forgetExpired(nowMs);
    if (this.slots.size >= SNAPSHOT_STREAMS_MAX) {
      throw new RegistryError(
        'REG_ERR_SNAPSHOT_BUSY',
        `this peer already serves ${SNAPSHOT_STREAMS_MAX} snapshot streams; ask another peer or retry later`,
        BUSY_RETRY_AFTER_SECONDS,
      );
    }
    const slot = this.nextSlot++;
    const deadlineMs = nowMs + SNAPSHOT_STREAM_MAX_DURATION_MS;
    this.slots.set(slot, { deadlineMs });
    return releasing(this.lines(slot, deadlineMs), () => this.slots.delete(slot));
  }

  private async *lines(slot: number, deadlineMs: number): AsyncGenerator<string> {
    const { store, clock } = this.components;
    try {
      yield encodeStartFrame(this.components.members(), store.size, this.components.settled());
      const writer = new RecordFrameWriter();
      let view = this.components.leaseView();
      for (const entry of store.entries()) {
        if (!writer.add(toWireRecord(entry, view))) continue;
        for (const frame of writer.flush()) yield frame.line;
        await this.components.nextTurn();
        if (clock.nowMs() > deadlineMs) throw new Error(`snapshot stream ran past its cap of ${SNAPSHOT_STREAM_MAX_DURATION_MS} ms`);
        view = this.components.leaseView();
      }
      for (const frame of writer.flush()) yield frame.line;
      yield encodeEndFrame(writer.frames, writer.recordsFramed);
    } finally {
      this.slots.delete(slot);
    }
  }

  private forgetExpired(nowMs: number): void {
    for (const [slot, { deadlineMs }] of this.slots) if (nowMs > deadlineMs) this.slots.delete(slot);
  }
}

/**
 * `lines`, with `release` run as soon as its reader ends it (`return` or `throw`). The
 * generator's own `finally` frees the slot only once it has started: one ended before its first
 * line (the request was aborted before the reply was sent, so the response stream was destroyed
 * unread) would otherwise hold its slot until its time cap.
 */
function releasing(lines: AsyncGenerator<string>, release: () => void): AsyncGenerator<string> {
  const released: AsyncGenerator<string> = {
    next: (...args) => lines.next(...args),
    return: (value) => {
      release();
      return lines.return(value);
    },
    throw: (error) => {
      release();
      return lines.throw(error);
    },
    [Symbol.asyncIterator]: () => released,
  };
  return released;
}
