import { describe, expect, it } from 'vitest';
import { encodeFrame } from '../../../src/persistence/frame.js';
import {
  decodeSegment,
  decodeSnapshot,
  encodeFileStart,
  encodeRecordFrame,
  encodeTrailer,
  FORMAT_VERSION,
  MAGIC_BYTES,
} from '../../../src/persistence/format.js';
import { record } from '../../support/records.js';

const records = [record({ instanceId: 'a' }), record({ instanceId: 'b', wallMs: 2_000, deleted: 'cancel' })];
const segmentHeader = { type: 'segment', format: FORMAT_VERSION, seq: 3, peerId: 'p', createdAtMs: 5 } as const;
const segmentStart = encodeFileStart(segmentHeader);
const segment = Buffer.concat([segmentStart, ...records.map(encodeRecordFrame)]);
const snapshotStart = encodeFileStart({ type: 'snapshot', format: FORMAT_VERSION, seq: 4, peerId: 'p', createdAtMs: 5, records: 2 });
const snapshot = Buffer.concat([snapshotStart, ...records.map(encodeRecordFrame), encodeTrailer(2)]);
const json = (value: unknown) => encodeFrame(Buffer.from(JSON.stringify(value)));

describe('decodeSegment', () => {
  it('reads the header and every record', () => {
    const decoded = decodeSegment(segment);
    expect(decoded).toMatchObject({ header: segmentHeader, damage: null, unsupportedFormat: null, sizeBytes: segment.length });
    expect(decoded.records).toEqual(records);
  });

  it('reads a segment with no record yet (a fresh one)', () => {
    expect(decodeSegment(segmentStart)).toMatchObject({ records: [], damage: null });
  });

  it.each([
    ['bad magic bytes', Buffer.concat([Buffer.from('NOTOURS!'), segment.subarray(MAGIC_BYTES)]), 0, 'bad magic'],
    ['a snapshot file', snapshot, 0, 'bad magic'],
    ['a cut header', segment.subarray(0, MAGIC_BYTES + 5), 0, 'file header: truncated frame header'],
    ['a header of the wrong type', Buffer.concat([segment.subarray(0, MAGIC_BYTES), json({ ...segmentHeader, type: 'snapshot' })]), 0, 'not a valid header'],
    ['a record that is not one', Buffer.concat([segmentStart, json({ type: 'put', record: { namespace: 1 } })]), segmentStart.length, 'invalid record: namespace'],
    ['an unknown entry', Buffer.concat([segmentStart, json({ type: 'purge' })]), segmentStart.length, 'unknown entry type "purge"'],
    ['a trailer', Buffer.concat([segmentStart, encodeTrailer(0)]), segmentStart.length, 'a trailer in a log segment'],
  ])('reports %s as damage at its offset', (_what, bytes, offset, reason) => {
    const decoded = decodeSegment(bytes);
    expect(decoded.damage?.offset).toBe(offset);
    expect(decoded.damage?.reason).toContain(reason);
    expect(decoded.damage?.droppedBytes).toBe(bytes.length - offset);
  });

  it('refuses to read a newer format instead of calling it damage', () => {
    const newer = Buffer.concat([segment.subarray(0, MAGIC_BYTES), json({ ...segmentHeader, format: FORMAT_VERSION + 1 })]);
    expect(decodeSegment(newer)).toMatchObject({ unsupportedFormat: FORMAT_VERSION + 1, damage: null, records: [] });
  });
});

describe('decodeSnapshot', () => {
  it('reads a whole snapshot', () => {
    expect(decodeSnapshot(snapshot)).toMatchObject({ damage: null, records });
  });

  it.each([
    ['no trailer', Buffer.concat([snapshotStart, ...records.map(encodeRecordFrame)]), 'snapshot ends before its trailer'],
    ['a trailer with the wrong count', Buffer.concat([snapshotStart, encodeRecordFrame(records[0]!), encodeTrailer(1)]), 'trailer says 1 records, found 1'],
    ['data after the trailer', Buffer.concat([snapshot, encodeRecordFrame(records[0]!)]), 'data after the trailer'],
  ])('calls a snapshot with %s damaged', (_what, bytes, reason) => {
    const decoded = decodeSnapshot(bytes);
    expect(decoded.damage?.reason).toBe(reason);
  });
});
