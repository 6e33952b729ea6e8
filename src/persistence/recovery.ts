import { compareVersions } from '../clock/hlc.js';
import { instanceKeyString, type InstanceRecord } from '../registry/types.js';
import { describeDiskError, pathIn, type Disk } from './disk.js';
import { parseFileName, segmentFileName, segmentsToReplay, snapshotFileName, snapshotReadOrder } from './files.js';
import { decodeSegment, decodeSnapshot, type DataFileKind, type DecodedFile, type FileDamage, type FileHeader } from './format.js';

/** What recovery found in one file. */
export interface FileReport {
  name: string;
  kind: DataFileKind;
  seq: number;
  sizeBytes: number;
  /** Records read from it (before the damage, if any). */
  records: number;
  header: FileHeader | null;
  damage: FileDamage | null;
  /** `used`: its records are loaded; `salvaged`: damaged, its records before the damage are loaded; `skipped`: not needed. */
  role: 'used' | 'salvaged' | 'skipped';
}

export interface Recovery {
  /** The newest record of every key found, last writer wins by version. */
  records: Map<string, InstanceRecord>;
  /** The snapshot loaded whole, or null (none, or every one damaged). */
  snapshotSeq: number | null;
  /** Every snapshot and segment looked at, in the order read. */
  files: FileReport[];
  /** Set when a file has a format this version does not read: nothing may be loaded. */
  unsupported: { name: string; format: number } | null;
  /** Every sequence number in use, set-aside files included (the next segment goes above them). */
  usedSeqs: number[];
  /** Leftover files: snapshots being written when the peer stopped, and files set aside earlier. */
  temps: string[];
  setAside: string[];
  /** Files the data dir holds that are not ours (left alone). */
  foreign: string[];
}

export interface RecoveryOptions {
  /** Decode every file, even those recovery does not need (the inspect command). */
  readAll?: boolean;
}

/**
 * Reads a data dir: the newest snapshot that is whole, then every log segment from it on.
 * A damaged file is used up to its damage and reported; a damaged snapshot makes recovery
 * fall back to the one before it (whose segments are kept for this). Reads only. Throws when
 * the directory cannot be listed or a file it needs cannot be read at all (an I/O error, no
 * permission, too large): that is not damage to cut, and guessing past it could lose data.
 */
export function recoverDataDir(disk: Disk, dir: string, options: RecoveryOptions = {}): Recovery {
  const recovery: Recovery = {
    records: new Map(),
    snapshotSeq: null,
    files: [],
    unsupported: null,
    usedSeqs: [],
    temps: [],
    setAside: [],
    foreign: [],
  };
  const snapshots: number[] = [];
  const segments: number[] = [];
  for (const name of disk.list(dir).sort()) {
    const parsed = parseFileName(name);
    if (parsed === null) recovery.foreign.push(name);
    else if (parsed.kind === 'snapshot') snapshots.push(parsed.seq);
    else if (parsed.kind === 'segment') segments.push(parsed.seq);
    else if (parsed.kind === 'temp') recovery.temps.push(name);
    else if (parsed.kind === 'damaged') recovery.setAside.push(name);
    if (parsed && 'seq' in parsed && parsed.seq !== null) recovery.usedSeqs.push(parsed.seq);
  }

  const read = (kind: DataFileKind, seq: number, name: string, use: boolean): void => {
    const decoded = readDecoded(disk, dir, name, kind);
    if (decoded.unsupportedFormat !== null && recovery.unsupported === null) {
      recovery.unsupported = { name, format: decoded.unsupportedFormat };
    }
    const role = !use ? 'skipped' : decoded.damage ? 'salvaged' : 'used';
    recovery.files.push({
      name,
      kind,
      seq,
      sizeBytes: decoded.sizeBytes,
      records: decoded.records.length,
      header: decoded.header,
      damage: decoded.damage,
      role,
    });
    if (use) mergeRecords(recovery.records, decoded.records);
  };

  for (const seq of snapshotReadOrder(snapshots)) {
    const found = recovery.snapshotSeq !== null;
    if (found && !options.readAll) break;
    read('snapshot', seq, snapshotFileName(seq), !found);
    const report = recovery.files[recovery.files.length - 1]!;
    if (!found && report.damage === null && report.header !== null) recovery.snapshotSeq = seq;
  }
  const replay = new Set(segmentsToReplay(segments, recovery.snapshotSeq));
  for (const seq of [...segments].sort((a, b) => a - b)) {
    if (replay.has(seq) || options.readAll) read('segment', seq, segmentFileName(seq), replay.has(seq));
  }
  if (recovery.unsupported) recovery.records.clear();
  return recovery;
}

/** Last writer wins: keeps, for every key, the record with the greatest version. */
export function mergeRecords(into: Map<string, InstanceRecord>, records: readonly InstanceRecord[]): void {
  for (const record of records) {
    const key = instanceKeyString(record);
    const current = into.get(key);
    if (current === undefined || compareVersions(record.version, current.version) > 0) into.set(key, record);
  }
}

/** A file of the data dir that cannot be read at all. */
export class UnreadableFileError extends Error {
  constructor(name: string, cause: unknown) {
    super(`cannot read ${name}: ${describeDiskError(cause)}`);
    this.name = 'UnreadableFileError';
  }
}

function readDecoded(disk: Disk, dir: string, name: string, kind: DataFileKind): DecodedFile {
  let buffer: Buffer;
  try {
    buffer = disk.readFile(pathIn(dir, name));
  } catch (error) {
    throw new UnreadableFileError(name, error);
  }
  return kind === 'snapshot' ? decodeSnapshot(buffer) : decodeSegment(buffer);
}
