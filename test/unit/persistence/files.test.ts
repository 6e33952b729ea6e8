import { describe, expect, it } from 'vitest';
import {
  nextSeq,
  parseFileName,
  planCleanup,
  segmentFileName,
  segmentsToReplay,
  snapshotFileName,
  snapshotReadOrder,
} from '../../../src/persistence/files.js';

describe('data dir file names', () => {
  it.each([
    [segmentFileName(7), { kind: 'segment', seq: 7 }],
    [snapshotFileName(12), { kind: 'snapshot', seq: 12 }],
    [`${snapshotFileName(12)}.tmp`, { kind: 'temp', seq: 12 }],
    [`${segmentFileName(3)}.damaged`, { kind: 'damaged', seq: 3 }],
    ['LOCK', { kind: 'lock' }],
    ['LOCK.abc.tmp', { kind: 'temp', seq: null }],
    ['log-0000000000000001.snap', null],
    ['log-1.seg', null],
    ['notes.txt', null],
  ])('reads %s', (name, expected) => {
    const parsed = parseFileName(name);
    if (expected === null) expect(parsed).toBeNull();
    else expect(parsed).toMatchObject({ ...expected, name });
  });
});

describe('recovery and cleanup plans', () => {
  it('tries snapshots newest first and replays the segments from the chosen one', () => {
    expect(snapshotReadOrder([3, 9, 5])).toEqual([9, 5, 3]);
    expect(segmentsToReplay([9, 3, 5, 4, 10], 5)).toEqual([5, 9, 10]);
    expect(segmentsToReplay([9, 3, 5], null)).toEqual([3, 5, 9]);
  });

  it.each([
    [[], [1, 2], { snapshots: [], segments: [] }],
    [[3], [1, 2, 3], { snapshots: [], segments: [] }],
    [[3, 6], [1, 2, 3, 4, 5, 6], { snapshots: [], segments: [1, 2] }],
    [[9, 3, 6], [3, 4, 5, 6, 7, 8, 9], { snapshots: [3], segments: [3, 4, 5] }],
  ])('with snapshots %j and segments %j deletes %j', (snapshots, segments, expected) => {
    expect(planCleanup(snapshots, segments)).toEqual(expected);
  });

  it('numbers the next segment above every number in use', () => {
    expect(nextSeq([])).toBe(1);
    expect(nextSeq([4, 9, 2])).toBe(10);
  });
});
