import { describe, expect, it, vi } from 'vitest';
import {
  decodeFrame,
  encodeEndFrame,
  encodeStartFrame,
  RecordFrameWriter,
  SNAPSHOT_FRAME_LIMIT_BYTES,
  SNAPSHOT_FRAME_MAX_BYTES,
  type RecordFrame,
  SNAPSHOT_FRAME_LIMIT_RECORDS,
  SnapshotFrameError,
  SnapshotStreamReader,
} from '../../../src/replication/snapshot-frames.js';
import type { WireRecord } from '../../../src/transport/peer-calls.js';
import { record } from '../../support/records.js';

const members = [{ id: 'peer-a', url: 'http://127.0.0.1:8761', region: 'r', zone: 'z' }];

function wire(i: number, metadata: Record<string, string> = {}): WireRecord {
  const rec = record({ wallMs: Date.UTC(2026, 0, 1), peerId: 'peer-a', instanceId: `i-${i}` });
  return { ...rec, data: { ...rec.data, metadata }, leaseRemainingMs: 30_000 };
}

/** Every frame the writer makes of `records`, flushed at the end. */
function framesOf(writer: RecordFrameWriter, records: WireRecord[]): string[] {
  const out: string[] = [];
  for (const r of records) if (writer.add(r)) out.push(...writer.flush().map((frame) => frame.line));
  out.push(...writer.flush().map((frame) => frame.line));
  return out;
}

describe('snapshot frames', () => {
  it('round-trips a stream: start, records frames, end', () => {
    const records = Array.from({ length: 5 }, (_, i) => wire(i));
    const lines = [encodeStartFrame(members, 5, true), ...framesOf(new RecordFrameWriter(2), records), encodeEndFrame(3, 5)];
    for (const line of lines) expect(line.endsWith('\n') && !line.slice(0, -1).includes('\n')).toBe(true);
    const reader = new SnapshotStreamReader();
    const frames = lines.map((line) => reader.accept(line.slice(0, -1)));
    reader.finish();
    expect(frames[0]).toEqual({ t: 'start', members, size: 5, settled: true });
    expect(frames.slice(1, 4).map((f) => (f.t === 'records' ? f.records : null))).toEqual([records.slice(0, 2), records.slice(2, 4), records.slice(4)]);
    expect(frames[4]).toEqual({ t: 'end', frames: 3, records: 5 });
  });

  it('closes a frame before the record that would take it past its byte cap; a record past the cap goes alone', () => {
    const big = 'x'.repeat(3_000);
    const records = [wire(0, { big }), wire(1, { big }), wire(2, { big: big.repeat(4) }), wire(3)];
    const lines = framesOf(new RecordFrameWriter(100, 8_000), records);
    expect(lines.map((line) => (JSON.parse(line) as { records: unknown[] }).records.length)).toEqual([2, 1, 1]);
    expect(Buffer.byteLength(lines[0]!)).toBeLessThanOrEqual(8_000);
    expect(Buffer.byteLength(lines[1]!)).toBeGreaterThan(8_000);
  });

  /** Every string `JSON.stringify` makes while `work` runs: what a writer encoded, splits included. */
  function encodedBy(work: () => void): number[] {
    const stringify = JSON.stringify;
    const sizes: number[] = [];
    const spy = vi.spyOn(JSON, 'stringify').mockImplementation((...args: Parameters<typeof JSON.stringify>) => {
      const text = stringify(...args);
      sizes.push(text.length);
      return text;
    });
    try {
      work();
    } finally {
      spy.mockRestore();
    }
    return sizes;
  }

  it('sizes the first frame by the first record: large records never make one huge frame to split', () => {
    const writer = new RecordFrameWriter();
    const big = 'x'.repeat(20_000);
    const flushes: RecordFrame[][] = [];
    const encoded = encodedBy(() => {
      for (let i = 0; i < 2_000; i++) if (writer.add(wire(i, { big }))) flushes.push(writer.flush());
      flushes.push(writer.flush());
    });
    // Before, the first frame took 2,000 records (42 MB) and was encoded again in halves: 419 MB in one turn.
    expect(Math.max(...encoded)).toBeLessThanOrEqual(SNAPSHOT_FRAME_MAX_BYTES);
    expect(encoded.reduce((sum, n) => sum + n, 0)).toBeLessThan(1.1 * 2_000 * 20_500);
    expect(flushes.slice(0, -1).every((flush) => flush.length === 1)).toBe(true);
    expect(flushes.flat().reduce((sum, frame) => sum + frame.records, 0)).toBe(2_000);
  });

  it('after records grow, encodes one frame again in parts that fit, then takes as many a frame as fit: none lost, order kept', () => {
    const writer = new RecordFrameWriter(100, 8_000);
    const kb = 'x'.repeat(1_000);
    const flushes: RecordFrame[][] = [];
    // 60 small records (about 300 B: frames of about 24), then 240 of about 1.3 KB.
    const encoded = encodedBy(() => {
      for (let i = 0; i < 300; i++) if (writer.add(wire(i, i < 60 ? {} : { kb }))) flushes.push(writer.flush());
      flushes.push(writer.flush());
    });
    const frames = flushes.flat();
    // The flushes that met the larger records with a count made for smaller ones (the first
    // holds both sizes, so its bytes per record still fall short) were encoded again in parts;
    // from then on one frame a flush.
    const split = flushes.filter((flush) => flush.length > 1).length;
    expect(split).toBeGreaterThanOrEqual(1);
    expect(split).toBeLessThanOrEqual(2);
    expect(flushes.slice(-20, -1).every((flush) => flush.length === 1)).toBe(true);
    expect(Math.max(...encoded)).toBeLessThan(5 * 8_000);
    expect(frames.reduce((sum, frame) => sum + frame.records, 0)).toBe(300);
    for (const frame of frames) expect(Buffer.byteLength(frame.line)).toBeLessThanOrEqual(8_000);
    const ids = frames.flatMap((frame) => (JSON.parse(frame.line) as { records: WireRecord[] }).records.map((r) => r.instanceId));
    expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => `i-${i}`));
  });

  it('counts a frame in UTF-8 bytes, not characters', () => {
    const wide = '€'.repeat(1_000); // 3,000 bytes, 1,000 characters
    const lines = framesOf(new RecordFrameWriter(100, 8_000), [wire(0, { wide }), wire(1, { wide }), wire(2, { wide })]);
    expect(lines).toHaveLength(2);
    for (const line of lines.slice(0, 1)) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(8_000);
  });

  it.each([
    ['a line past the byte cap', 'x'.repeat(SNAPSHOT_FRAME_LIMIT_BYTES + 1), /more than 8388608 bytes/],
    ['a line of multi-byte characters past the byte cap', '"' + '€'.repeat(SNAPSHOT_FRAME_LIMIT_BYTES / 3 + 1) + '"', /more than 8388608 bytes/],
    ['JSON that does not parse', '{"t":"records","records":[', /not JSON/],
    ['a JSON array', '[]', /must be a JSON object/],
    ['an unknown frame type', '{"t":"delete"}', /unknown snapshot frame type "delete"/],
    ['another version', '{"t":"start","v":2,"members":[]}', /version 2 is not 1/],
    ['bad members', '{"t":"start","v":1,"members":"x"}', /start frame: members/],
    ['records that are not an array', '{"t":"records","records":{}}', /records must be an array/],
    [
      'a frame of too many records',
      JSON.stringify({ t: 'records', records: Array.from({ length: SNAPSHOT_FRAME_LIMIT_RECORDS + 1 }, () => 0) }),
      /10001 records, more than 10000/,
    ],
    ['an end frame without counts', '{"t":"end","frames":-1,"records":0}', /must be counts/],
  ])('refuses %s', (_name, line, message) => {
    expect(() => decodeFrame(line)).toThrow(SnapshotFrameError);
    expect(() => decodeFrame(line)).toThrow(message);
  });

  it("carries whether the serving peer's registry is settled; a start frame without the field (an older peer) reads as settled", () => {
    expect(decodeFrame(encodeStartFrame(members, 3, false).trim())).toEqual({ t: 'start', members, size: 3, settled: false });
    expect(decodeFrame(encodeStartFrame(members, 3, true).trim())).toMatchObject({ settled: true });
    expect(decodeFrame(JSON.stringify({ t: 'start', v: 1, members, size: 3 }))).toEqual({ t: 'start', members, size: 3, settled: true });
    // Only an explicit false is unsettled.
    expect(decodeFrame(JSON.stringify({ t: 'start', v: 1, members, size: 3, settled: 0 }))).toMatchObject({ settled: true });
  });

  it('accepts a frame of exactly the record cap', () => {
    const line = JSON.stringify({ t: 'records', records: Array.from({ length: SNAPSHOT_FRAME_LIMIT_RECORDS }, () => 0) });
    expect(decodeFrame(line)).toMatchObject({ t: 'records' });
  });

  it('refuses a stream out of order, cut short, or going on after its end', () => {
    const start = encodeStartFrame(members, 1, true).trim();
    const records = framesOf(new RecordFrameWriter(), [wire(0)])[0]!.trim();
    expect(() => new SnapshotStreamReader().accept(records)).toThrow(/starts with a records frame/);
    const twice = new SnapshotStreamReader();
    twice.accept(start);
    expect(() => twice.accept(start)).toThrow(/second start frame/);
    const short = new SnapshotStreamReader();
    short.accept(start);
    short.accept(records);
    expect(() => short.finish()).toThrow(/ended before its end frame \(1 frames of 1 records came\)/);
    expect(() => short.accept(encodeEndFrame(2, 2).trim())).toThrow(/cut short: 1 frames of 1 records came, the end frame says 2 of 2/);
    const done = new SnapshotStreamReader();
    done.accept(start);
    done.accept(encodeEndFrame(0, 0).trim());
    done.finish();
    expect(() => done.accept(records)).toThrow(/after its end frame/);
  });
});
