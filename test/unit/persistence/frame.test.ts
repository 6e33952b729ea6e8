import { describe, expect, it } from 'vitest';
import { crc32, crc32Table } from '../../../src/persistence/crc32.js';
import { encodeFrame, FRAME_HEADER_BYTES, FRAME_MAX_PAYLOAD_BYTES, scanFrames } from '../../../src/persistence/frame.js';

describe('crc32', () => {
  it('matches the standard check value and the table implementation', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32Table(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32(Buffer.alloc(0))).toBe(0);
    for (let size = 1; size < 300; size += 37) {
      const data = Buffer.from(Array.from({ length: size }, (_, i) => (i * 131 + size) & 0xff));
      expect(crc32(data)).toBe(crc32Table(data));
      const cut = Math.floor(size / 3);
      expect(crc32(data.subarray(cut), crc32(data.subarray(0, cut)))).toBe(crc32(data));
      expect(crc32Table(data.subarray(cut), crc32Table(data.subarray(0, cut)))).toBe(crc32(data));
    }
  });
});

describe('frames', () => {
  const payloads = ['{"a":1}', '', 'x'.repeat(1_000)].map((text) => Buffer.from(text));
  const file = Buffer.concat(payloads.map(encodeFrame));
  const offsets = [0, FRAME_HEADER_BYTES + 7, 2 * FRAME_HEADER_BYTES + 7];

  it('round-trips payloads with their offsets', () => {
    const scan = scanFrames(file, 0);
    expect(scan.damage).toBeNull();
    expect(scan.endOffset).toBe(file.length);
    expect(scan.frames.map((frame) => frame.payload.toString())).toEqual(payloads.map(String));
    expect(scan.frames.map((frame) => frame.offset)).toEqual(offsets);
    expect(scanFrames(file, 0, 1).frames).toHaveLength(1);
  });

  const flip = (at: number) => {
    const copy = Buffer.from(file);
    copy[at] = copy[at]! ^ 0x10;
    return copy;
  };
  const withLength = (length: number) => {
    const copy = Buffer.from(file);
    copy.writeUInt32LE(length, offsets[2]!);
    return copy;
  };

  it.each([
    ['cut inside the third header', file.subarray(0, offsets[2]! + 5), offsets[2], 'truncated frame header'],
    ['cut inside the third payload', file.subarray(0, file.length - 1), offsets[2], 'truncated frame'],
    ['a flipped payload byte', flip(offsets[0]! + FRAME_HEADER_BYTES + 3), offsets[0], 'checksum mismatch'],
    ['a flipped checksum byte', flip(offsets[2]! + 5), offsets[2], 'checksum mismatch'],
    ['a flipped length byte (shorter)', withLength(999), offsets[2], 'checksum mismatch'],
    ['a length past the end', withLength(5_000), offsets[2], 'truncated frame'],
    ['an absurd length', withLength(FRAME_MAX_PAYLOAD_BYTES + 1), offsets[2], 'frame length out of range'],
    ['zeros after the last frame', Buffer.concat([file, Buffer.alloc(3)]), file.length, 'truncated frame header'],
  ])('stops at %s and keeps every frame before it', (_what, bytes, offset, reason) => {
    const scan = scanFrames(bytes, 0);
    expect(scan.damage).toEqual({ offset, reason });
    expect(scan.endOffset).toBe(offset);
    expect(scan.frames.map((frame) => frame.offset)).toEqual(offsets.filter((o) => o < offset!));
  });

  it('takes an empty frame of zeros for damage, not for an empty payload', () => {
    // A preallocated or zero-filled tail must not read as valid empty frames.
    expect(scanFrames(Buffer.alloc(16), 0).damage).toEqual({ offset: 0, reason: 'checksum mismatch' });
  });
});
