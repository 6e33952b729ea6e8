import { isObject, parseDescriptors } from '../membership/messages.js';
import type { PeerDescriptor, WireRecord } from '../transport/peer-calls.js';

/*
 * The start-up snapshot stream's wire format (`POST /v1/peer/snapshot-stream`): NDJSON, one
 * JSON object a line ("frame"), in this order:
 *
 *   {"t":"start","v":1,"members":[...],"size":N,"settled":S}
 *                                                     the serving peer's members; N = its store size then;
 *                                                     S = whether its registry is settled (below)
 *   {"t":"records","records":[...]}                   as many as it takes, each <= SNAPSHOT_FRAME_MAX_BYTES
 *   {"t":"end","frames":F,"records":R}                F record frames carrying R records in all were sent
 *
 * A stream that stops before its end frame, or whose counts differ from the end frame's, was
 * cut short: the receiver treats it as failed (what it applied stays, merged as any record is).
 * `settled` is false while the serving peer holds a registry it knows may be partial (its own
 * start-up sync has begun receiving and is not done, or failed midway; bootstrap.ts): the
 * receiver then merges the records but does not count the stream as its sync's completion.
 * A start frame without it (a peer of an older version) reads as settled, as it always did.
 * Pure functions: no I/O, no clock.
 */

/** The format's version, in the start frame; a receiver refuses another. */
export const SNAPSHOT_STREAM_VERSION = 1;
/** Records the serving peer puts in one frame (fewer when they pass `SNAPSHOT_FRAME_MAX_BYTES`). */
export const SNAPSHOT_FRAME_RECORDS = 2_000;
/**
 * Most bytes of a frame the serving peer sends (a single record larger than this goes alone):
 * about 230 records of 400 bytes. Below V8's largest ordinary heap object (128 KB), so that
 * neither the frame's JSON on the serving side nor its text on the joining side is a
 * large-object allocation: on the 2-core machine decoding an 830 KB frame to a string cost 3 ms,
 * eight frames of 100 KB 0.07 ms in all, and `JSON.parse` of the eight 2.8 ms against 6.4 ms
 * (`npx tsx bench/frame-sizes.ts`; bench/findings.md, 2026-12-07 evening). At 1 MB a frame (the cap before) the joining peer of
 * a 1,000,000 join spent 9% of its time turning frames into strings. 1,000,000 instances are
 * about 4,400 frames; a frame still costs the serving event loop well under a millisecond.
 */
export const SNAPSHOT_FRAME_MAX_BYTES = 96 * 1024;
/** Most bytes of one line the receiver accepts (checked before parsing): 85 times what a sender of this version sends, eight times what one of the 1 MB frames before it did. */
export const SNAPSHOT_FRAME_LIMIT_BYTES = 8 * 1024 * 1024;
/** Most records of one frame the receiver accepts. */
export const SNAPSHOT_FRAME_LIMIT_RECORDS = 10_000;

export type SnapshotFrame =
  | { t: 'start'; members: PeerDescriptor[]; size: number; settled: boolean }
  | { t: 'records'; records: readonly unknown[] }
  | { t: 'end'; frames: number; records: number };

/** A frame that cannot be read, or one that breaks the stream's order or caps. */
export class SnapshotFrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotFrameError';
  }
}

/** The start frame, as one line; `settled` says whether the serving peer's registry is settled (see above). */
export function encodeStartFrame(members: readonly PeerDescriptor[], size: number, settled: boolean): string {
  return `${JSON.stringify({ t: 'start', v: SNAPSHOT_STREAM_VERSION, members, size, settled })}\n`;
}

/** The end frame, as one line. */
export function encodeEndFrame(frames: number, records: number): string {
  return `${JSON.stringify({ t: 'end', frames, records })}\n`;
}

/** A records frame as one line, and how many records it holds. */
export interface RecordFrame {
  line: string;
  records: number;
}

/** The share of `maxBytes` a frame aims at, so that records a little larger than the last ones still fit. */
const FRAME_FILL = 0.9;

/**
 * Records frames of wire records: a frame holds at most `maxRecords` records and at most
 * `maxBytes` bytes (a record larger than that goes in a frame of its own). Each frame is one
 * `JSON.stringify` of the frame object: on the serving peer of a 1,000,000-instance join, a
 * string per record measured in bytes and joined into the frame cost three times as much
 * (bench/stream-encode.ts, and bench/frame-sizes.ts for the parts: the join of 2,000 parts
 * alone about 3 ms a frame, and the frame was then copied once more to be flattened for the
 * socket). So a frame's size is known only once
 * it is encoded: the first frame takes as many records as the first record's size says fit in
 * 90% of `maxBytes`, each next one as many as the last flush's bytes per record say. A frame
 * that still comes out larger (records that grew) is encoded again in parts of the count that
 * fits, so a flush encodes about twice the bytes of a frame of its records at most: records
 * that suddenly grow k-fold cost one frame of k times the cap, once, before the count follows.
 *
 * `add` says when the next frame is due; `flush` encodes what was added (one frame, more after a
 * split, none when nothing was added). `frames` and `recordsFramed` count what every flush made,
 * for the stream's end frame.
 */
export class RecordFrameWriter {
  private records: WireRecord[] = [];
  /** Records the next frame takes: 0 until the first record has been measured. */
  private target = 0;
  /** Frames made so far, and the records in them. */
  frames = 0;
  recordsFramed = 0;

  constructor(
    private readonly maxRecords = SNAPSHOT_FRAME_RECORDS,
    private readonly maxBytes = SNAPSHOT_FRAME_MAX_BYTES,
  ) {}

  /** Records waiting for their frame. */
  get pending(): number {
    return this.records.length;
  }

  /** Adds a record; true when the next frame is due (then `flush`). */
  add(record: WireRecord): boolean {
    if (this.target === 0) this.target = this.fitting(1, Buffer.byteLength(JSON.stringify(record)));
    this.records.push(record);
    return this.records.length >= this.target;
  }

  /** The frames of the records added since the last flush, in their order. */
  flush(): RecordFrame[] {
    const records = this.records;
    this.records = [];
    const frames: RecordFrame[] = [];
    if (records.length === 0) return frames;
    const bytes = this.encode(records, frames);
    this.target = this.fitting(records.length, bytes);
    return frames;
  }

  /** Appends the frames of `records` to `out`; returns their bytes. */
  private encode(records: WireRecord[], out: RecordFrame[]): number {
    const line = `${JSON.stringify({ t: 'records', records })}\n`;
    const bytes = Buffer.byteLength(line);
    if (bytes <= this.maxBytes || records.length === 1) {
      out.push({ line, records: records.length });
      this.frames += 1;
      this.recordsFramed += records.length;
      return bytes;
    }
    const part = Math.min(records.length - 1, this.fitting(records.length, bytes));
    let total = 0;
    for (let from = 0; from < records.length; from += part) total += this.encode(records.slice(from, from + part), out);
    return total;
  }

  /** How many records of the size these were fit in 90% of `maxBytes` (at least 1, at most `maxRecords`). */
  private fitting(records: number, bytes: number): number {
    return Math.max(1, Math.min(this.maxRecords, Math.floor((this.maxBytes * FRAME_FILL * records) / bytes)));
  }
}

/**
 * Reads one line of the stream (without its newline). Throws a `SnapshotFrameError` for a line
 * past `SNAPSHOT_FRAME_LIMIT_BYTES` (checked before parsing), JSON that does not parse, an
 * unknown frame type or version, or a records frame past `SNAPSHOT_FRAME_LIMIT_RECORDS`.
 * Records are left unparsed: the inbox checks each one as it merges it.
 */
export function decodeFrame(line: string): SnapshotFrame {
  // UTF-8 takes at least one byte per UTF-16 unit: a line longer in units is longer in bytes.
  if (line.length > SNAPSHOT_FRAME_LIMIT_BYTES || Buffer.byteLength(line) > SNAPSHOT_FRAME_LIMIT_BYTES) {
    throw new SnapshotFrameError(`snapshot frame of more than ${SNAPSHOT_FRAME_LIMIT_BYTES} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new SnapshotFrameError('snapshot frame is not JSON');
  }
  if (!isObject(value)) throw new SnapshotFrameError('snapshot frame must be a JSON object');
  switch (value.t) {
    case 'start': {
      if (value.v !== SNAPSHOT_STREAM_VERSION) throw new SnapshotFrameError(`snapshot stream version ${String(value.v)} is not ${SNAPSHOT_STREAM_VERSION}`);
      let members: PeerDescriptor[];
      try {
        members = parseDescriptors('members', value.members);
      } catch (error) {
        throw new SnapshotFrameError(`snapshot start frame: ${(error as Error).message}`);
      }
      // Only an explicit false is unsettled: an older peer sends no field.
      return { t: 'start', members, size: isCount(value.size) ? value.size : 0, settled: value.settled !== false };
    }
    case 'records': {
      if (!Array.isArray(value.records)) throw new SnapshotFrameError('snapshot records frame: records must be an array');
      if (value.records.length > SNAPSHOT_FRAME_LIMIT_RECORDS) {
        throw new SnapshotFrameError(`snapshot records frame of ${value.records.length} records, more than ${SNAPSHOT_FRAME_LIMIT_RECORDS}`);
      }
      return { t: 'records', records: value.records };
    }
    case 'end': {
      if (!isCount(value.frames) || !isCount(value.records)) throw new SnapshotFrameError('snapshot end frame: frames and records must be counts');
      return { t: 'end', frames: value.frames, records: value.records };
    }
    default:
      throw new SnapshotFrameError(`unknown snapshot frame type ${JSON.stringify(value.t)?.slice(0, 40)}`);
  }
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0;

/**
 * The receiver's view of one stream: checks that frames come in order (start, records, end)
 * and that the end frame's counts match what came. `accept` returns the frame to act on.
 */
export class SnapshotStreamReader {
  private started = false;
  private ended = false;
  private frames = 0;
  private records = 0;

  /** Decodes a line and checks its place in the stream. */
  accept(line: string): SnapshotFrame {
    if (this.ended) throw new SnapshotFrameError('snapshot stream goes on after its end frame');
    const frame = decodeFrame(line);
    if (!this.started && frame.t !== 'start') throw new SnapshotFrameError(`snapshot stream starts with a ${frame.t} frame, not start`);
    if (this.started && frame.t === 'start') throw new SnapshotFrameError('snapshot stream has a second start frame');
    if (frame.t === 'start') this.started = true;
    if (frame.t === 'records') {
      this.frames += 1;
      this.records += frame.records.length;
    }
    if (frame.t === 'end') {
      if (frame.frames !== this.frames || frame.records !== this.records) {
        throw new SnapshotFrameError(`snapshot stream cut short: ${this.frames} frames of ${this.records} records came, the end frame says ${frame.frames} of ${frame.records}`);
      }
      this.ended = true;
    }
    return frame;
  }

  /** Throws unless the end frame came (a stream that stopped before it was cut short). */
  finish(): void {
    if (!this.ended) throw new SnapshotFrameError(`snapshot stream ended before its end frame (${this.frames} frames of ${this.records} records came)`);
  }
}
