import type { InstanceRecord } from '../registry/types.js';
import { encodeFrame, encodeTextFrame, scanFrames, type DecodedFrame } from './frame.js';
import { checkRecord } from './record-codec.js';

/**
 * The on-disk format (docs/durability.md). Every file starts with 8 magic bytes, then a header
 * frame, then record frames; a snapshot ends with a trailer frame. Frame payloads are JSON:
 *
 *   header  {"type":"segment","format":1,"seq":N,"peerId":"...","createdAtMs":T}
 *           {"type":"snapshot","format":1,"seq":S,"peerId":"...","createdAtMs":T,"records":n}
 *   record  {"type":"put","record":{...InstanceRecord...}}
 *   trailer {"type":"end","records":n}                        (snapshots only)
 *
 * A segment's `seq` is its number; a snapshot's `seq` is the first segment to replay after it.
 * `format` is bumped on any change a reader of the previous format would misread.
 */
export const FORMAT_VERSION = 1;

export type DataFileKind = 'segment' | 'snapshot';

export const MAGIC: Record<DataFileKind, Buffer> = {
  segment: Buffer.from('RGSEGMNT', 'latin1'),
  snapshot: Buffer.from('RGSNAPSH', 'latin1'),
};
export const MAGIC_BYTES = 8;

export interface FileHeader {
  type: DataFileKind;
  format: number;
  seq: number;
  peerId: string;
  createdAtMs: number;
  /** Snapshots only: how many records follow. */
  records?: number;
}

export interface FileDamage {
  /** Byte offset of the first byte not used. */
  offset: number;
  reason: string;
  /** Bytes from `offset` to the end of the file, all dropped. */
  droppedBytes: number;
}

export interface DecodedFile {
  header: FileHeader | null;
  /** Every record before the damage (all of them when there is none). */
  records: InstanceRecord[];
  sizeBytes: number;
  damage: FileDamage | null;
  /** Set when the file says it has a format this reader does not know: nothing was read. */
  unsupportedFormat: number | null;
}

/** The magic and header frame that start a file. */
export function encodeFileStart(header: FileHeader): Buffer {
  return Buffer.concat([MAGIC[header.type], encodeFrame(Buffer.from(JSON.stringify(header)))]);
}

/** One record frame; the string is built by hand to spare a wrapper object on the hot path. */
export function encodeRecordFrame(record: InstanceRecord): Buffer {
  return encodeTextFrame(`{"type":"put","record":${JSON.stringify(record)}}`);
}

/** The trailer that closes a snapshot: a snapshot without it was not written to the end. */
export function encodeTrailer(records: number): Buffer {
  return encodeFrame(Buffer.from(JSON.stringify({ type: 'end', records })));
}

/** Decodes a log segment: everything up to the first bad frame. Pure; never throws. */
export function decodeSegment(buffer: Buffer): DecodedFile {
  return decodeFile(buffer, 'segment');
}

/**
 * Decodes a snapshot. Besides bad frames, a snapshot is damaged when its trailer is missing or
 * does not match the records before it (it was cut short). Pure; never throws.
 */
export function decodeSnapshot(buffer: Buffer): DecodedFile {
  return decodeFile(buffer, 'snapshot');
}

function decodeFile(buffer: Buffer, kind: DataFileKind): DecodedFile {
  const result: DecodedFile = { header: null, records: [], sizeBytes: buffer.length, damage: null, unsupportedFormat: null };
  const damage = (offset: number, reason: string): DecodedFile => {
    result.damage = { offset, reason, droppedBytes: buffer.length - offset };
    return result;
  };
  if (buffer.length < MAGIC_BYTES || !buffer.subarray(0, MAGIC_BYTES).equals(MAGIC[kind])) {
    return damage(0, `not a ${kind} file (bad magic bytes)`);
  }
  const start = scanFrames(buffer, MAGIC_BYTES, 1);
  const headerFrame = start.frames[0];
  if (!headerFrame) return damage(0, `file header: ${start.damage?.reason ?? 'missing'}`);
  const header = parseHeader(headerFrame.payload, kind);
  if (typeof header === 'number') {
    result.unsupportedFormat = header;
    return result;
  }
  if (header === null) return damage(0, 'file header: not a valid header');
  result.header = header;
  const scan = scanFrames(buffer, start.endOffset);
  let trailer: { offset: number; records: unknown } | null = null;
  for (const frame of scan.frames) {
    if (trailer) return damage(frame.offset, 'data after the trailer');
    const entry = parseEntry(frame);
    if (typeof entry === 'string') return damage(frame.offset, entry);
    if ('records' in entry) {
      if (kind !== 'snapshot') return damage(frame.offset, 'a trailer in a log segment');
      trailer = { offset: frame.offset, records: entry.records };
    } else {
      result.records.push(entry.record);
    }
  }
  if (scan.damage) return damage(scan.damage.offset, scan.damage.reason);
  if (kind === 'snapshot') {
    if (!trailer) return damage(scan.endOffset, 'snapshot ends before its trailer');
    if (trailer.records !== result.records.length || header.records !== result.records.length) {
      return damage(trailer.offset, `trailer says ${String(trailer.records)} records, found ${result.records.length}`);
    }
  }
  return result;
}

/** The header, null when it is not one, or the format number when it is a format we do not read. */
function parseHeader(payload: Buffer, kind: DataFileKind): FileHeader | number | null {
  const value = parseJson(payload);
  if (typeof value !== 'object' || value === null) return null;
  const header = value as Record<string, unknown>;
  if (typeof header.format === 'number' && Number.isInteger(header.format) && header.format > FORMAT_VERSION) {
    return header.format;
  }
  const ok =
    header.type === kind &&
    header.format === FORMAT_VERSION &&
    Number.isInteger(header.seq) &&
    typeof header.peerId === 'string' &&
    typeof header.createdAtMs === 'number' &&
    (kind === 'segment' || Number.isInteger(header.records));
  return ok ? (header as unknown as FileHeader) : null;
}

function parseEntry(frame: DecodedFrame): { record: InstanceRecord } | { records: unknown } | string {
  const value = parseJson(frame.payload);
  if (typeof value !== 'object' || value === null) return 'frame payload is not a JSON object';
  const entry = value as Record<string, unknown>;
  if (entry.type === 'end') return { records: entry.records };
  if (entry.type !== 'put') return `unknown entry type ${JSON.stringify(entry.type)}`;
  const record = checkRecord(entry.record);
  return typeof record === 'string' ? `invalid record: ${record}` : { record };
}

function parseJson(payload: Buffer): unknown {
  try {
    return JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
}
