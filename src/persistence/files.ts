/**
 * What lives in a data dir and which files each step uses. Pure functions only: which
 * snapshot to try first, which segments to replay after it, which files a new snapshot makes
 * obsolete.
 *
 *   LOCK                            the running peer (lock.ts)
 *   log-0000000000000007.seg        log segment 7: every write since snapshot 7 was started
 *   snapshot-0000000000000007.snap  every record at the moment segment 7 was opened
 *   *.tmp                           a snapshot being written (deleted at start)
 *   *.damaged                       a damaged file set aside at start, kept for inspection
 */
export const LOCK_FILE = 'LOCK';

export type DataFileName =
  | { kind: 'segment' | 'snapshot'; seq: number; name: string }
  | { kind: 'temp' | 'damaged'; seq: number | null; name: string }
  | { kind: 'lock'; name: string };

const SEQ_DIGITS = 16;
const DATA_FILE = /^(log|snapshot)-(\d{16})\.(seg|snap)$/;

export function segmentFileName(seq: number): string {
  return `log-${String(seq).padStart(SEQ_DIGITS, '0')}.seg`;
}

export function snapshotFileName(seq: number): string {
  return `snapshot-${String(seq).padStart(SEQ_DIGITS, '0')}.snap`;
}

/** What a file name in the data dir is; null for a file that is not ours (left alone). */
export function parseFileName(name: string): DataFileName | null {
  if (name === LOCK_FILE) return { kind: 'lock', name };
  for (const [suffix, kind] of [['.tmp', 'temp'], ['.damaged', 'damaged']] as const) {
    if (name.endsWith(suffix)) {
      const inner = parseFileName(name.slice(0, -suffix.length));
      return { kind, seq: inner && 'seq' in inner ? inner.seq : null, name };
    }
  }
  const match = DATA_FILE.exec(name);
  if (!match) return null;
  const kind = match[1] === 'log' ? 'segment' : 'snapshot';
  if ((kind === 'segment') !== (match[3] === 'seg')) return null;
  return { kind, seq: Number(match[2]), name };
}

/** Snapshots in the order recovery tries them: newest first. */
export function snapshotReadOrder(snapshotSeqs: readonly number[]): number[] {
  return [...snapshotSeqs].sort((a, b) => b - a);
}

/**
 * The segments to replay on top of snapshot `fromSeq` (every one when no snapshot could be
 * used), oldest first. Replay is last-writer-wins by version, so the order only matters for
 * reading the log as it was written.
 */
export function segmentsToReplay(segmentSeqs: readonly number[], fromSeq: number | null): number[] {
  return segmentSeqs.filter((seq) => fromSeq === null || seq >= fromSeq).sort((a, b) => a - b);
}

/**
 * What a new snapshot makes obsolete. The newest two snapshots are kept, and every segment
 * from the older of the two on, so that a damaged newest snapshot can fall back to the
 * previous one and lose nothing. With a single snapshot every segment is kept.
 */
export function planCleanup(
  snapshotSeqs: readonly number[],
  segmentSeqs: readonly number[],
): { snapshots: number[]; segments: number[] } {
  const newestFirst = snapshotReadOrder(snapshotSeqs);
  const previous = newestFirst[1];
  if (previous === undefined) return { snapshots: [], segments: [] };
  return {
    snapshots: newestFirst.slice(2),
    segments: segmentSeqs.filter((seq) => seq < previous).sort((a, b) => a - b),
  };
}

/** The number of the next segment: above every number in use, set-aside files included. */
export function nextSeq(usedSeqs: Iterable<number>): number {
  let max = 0;
  for (const seq of usedSeqs) max = Math.max(max, seq);
  return max + 1;
}
