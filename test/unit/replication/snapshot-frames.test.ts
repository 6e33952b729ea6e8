import { describe, expect, it } from 'vitest';
import {
  decodeFrame,
  encodeEndFrame,
  encodeStartFrame,
  RecordFrameWriter,
  SNAPSHOT_FRAME_LIMIT_BYTES,
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

  it('after a frame past its byte cap, takes as many records a frame as fit: each within the cap, none encoded twice', () => {
    const writer = new RecordFrameWriter(100, 8_000);
    const kb = 'x'.repeat(1_000);
    const flushes: RecordFrame[][] = [];
    for (let i = 0; i < 300; i++) if (writer.add(wire(i, { kb }))) flushes.push(writer.flush());
    flushes.push(writer.flush());
    const frames = flushes.flat();
    // The first frame was due at 100 records (about 130 KB): encoded again in halves until each fit.
    expect(flushes[0]!.length).toBeGreaterThan(1);
    // From then on each frame is due at the count that fits: one frame a flush.
    expect(flushes.slice(1, -1).every((flush) => flush.length === 1)).toBe(true);
    expect(flushes.length).toBeGreaterThan(30);
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
