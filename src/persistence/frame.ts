import { crc32 } from './crc32.js';

/**
 * Framing of every file in the data dir. A frame is
 *
 *   u32 LE payload length | u32 LE CRC-32 of (the 4 length bytes, then the payload) | payload
 *
 * so a torn or corrupted frame is caught whether the damage hit its length, its checksum or its
 * payload. The payload is UTF-8 JSON (see format.ts). Decoding stops at the first frame that
 * does not check out: everything before it is kept, everything from it on is reported.
 */
export const FRAME_HEADER_BYTES = 8;

/** A frame longer than this is taken for damage: no record comes near it (bodies are capped at 16 MiB). */
export const FRAME_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024;

/** Frames a payload. */
export function encodeFrame(payload: Buffer): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  payload.copy(frame, FRAME_HEADER_BYTES);
  return sealFrame(frame);
}

/** Frames a text payload, encoded as UTF-8 straight into the frame (the hot path: one buffer, no copy). */
export function encodeTextFrame(text: string): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + Buffer.byteLength(text));
  frame.write(text, FRAME_HEADER_BYTES, 'utf8');
  return sealFrame(frame);
}

/** Fills in the length and checksum of a frame whose payload is in place. */
function sealFrame(frame: Buffer): Buffer {
  const length = frame.length - FRAME_HEADER_BYTES;
  frame.writeUInt32LE(length, 0);
  frame.writeUInt32LE(frameChecksum(frame, 0, length), 4);
  return frame;
}

function frameChecksum(buffer: Buffer, offset: number, length: number): number {
  const withLength = crc32(buffer.subarray(offset, offset + 4));
  return crc32(buffer.subarray(offset + FRAME_HEADER_BYTES, offset + FRAME_HEADER_BYTES + length), withLength);
}

export type FrameDamageReason = 'truncated frame header' | 'truncated frame' | 'frame length out of range' | 'checksum mismatch';

export interface DecodedFrame {
  /** Byte offset of the frame in the buffer. */
  offset: number;
  payload: Buffer;
}

export interface FrameScan {
  frames: DecodedFrame[];
  /** Offset just past the last good frame: where the cut is, if there is damage. */
  endOffset: number;
  /** The first frame that does not check out, if any; nothing from its offset on is used. */
  damage: { offset: number; reason: FrameDamageReason } | null;
}

/**
 * Reads frames from `start` to the end of `buffer`, stopping at the first bad one. Pure; never
 * throws, whatever the bytes. `maxFrames` stops early (the file header is one frame).
 */
export function scanFrames(buffer: Buffer, start: number, maxFrames = Number.POSITIVE_INFINITY): FrameScan {
  const frames: DecodedFrame[] = [];
  let offset = start;
  while (offset < buffer.length && frames.length < maxFrames) {
    const damage = checkFrame(buffer, offset);
    if (damage) return { frames, endOffset: offset, damage: { offset, reason: damage } };
    const length = buffer.readUInt32LE(offset);
    frames.push({ offset, payload: buffer.subarray(offset + FRAME_HEADER_BYTES, offset + FRAME_HEADER_BYTES + length) });
    offset += FRAME_HEADER_BYTES + length;
  }
  return { frames, endOffset: offset, damage: null };
}

/** Why the frame at `offset` cannot be used, or null when it checks out. */
export function checkFrame(buffer: Buffer, offset: number): FrameDamageReason | null {
  if (buffer.length - offset < FRAME_HEADER_BYTES) return 'truncated frame header';
  const length = buffer.readUInt32LE(offset);
  if (length > FRAME_MAX_PAYLOAD_BYTES) return 'frame length out of range';
  if (buffer.length - offset - FRAME_HEADER_BYTES < length) return 'truncated frame';
  if (frameChecksum(buffer, offset, length) !== buffer.readUInt32LE(offset + 4)) return 'checksum mismatch';
  return null;
}
