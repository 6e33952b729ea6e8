import type { InstanceRecord, StoredInstance } from '../registry/types.js';
import { pathIn, type Disk } from './disk.js';
import { snapshotFileName } from './files.js';
import { encodeFileStart, encodeRecordFrame, encodeTrailer, FORMAT_VERSION } from './format.js';

/** Records encoded between two yields to the event loop, so a big snapshot never stalls requests for long. */
const RECORDS_PER_CHUNK = 2_000;

export interface SnapshotMeta {
  /** The first segment to replay after this snapshot. */
  seq: number;
  peerId: string;
  createdAtMs: number;
}

export interface WrittenSnapshot {
  name: string;
  records: number;
  sizeBytes: number;
}

/**
 * Records taken from the store per turn of the event loop when a snapshot collects them. Taken
 * in one piece, the records of a big peer are one turn of the event loop proportional to the
 * registry (every heartbeat waits for it); 20,000 are a small part of a ms.
 */
export const SNAPSHOT_COLLECT_RECORDS = 20_000;

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The records of `entries` (the store's), `perTurn` at a time with a yield between two turns.
 * The log has been rolled before this starts, so a write made while the collection is
 * suspended is in a segment the snapshot is replayed with: the snapshot may hold an older or a
 * newer version of that record, and the replay keeps the newer (restore compares versions). A
 * tombstone purged meanwhile may be in the snapshot; a restart skips it once expired.
 */
export async function collectRecords(
  entries: Iterable<StoredInstance>,
  yieldTurn: () => Promise<void> = yieldToEventLoop,
  perTurn = SNAPSHOT_COLLECT_RECORDS,
): Promise<InstanceRecord[]> {
  const records: InstanceRecord[] = [];
  let inTurn = 0;
  for (const entry of entries) {
    if (inTurn === perTurn) {
      await yieldTurn();
      inTurn = 0;
    }
    inTurn += 1;
    records.push(entry.record);
  }
  return records;
}

/**
 * Writes a snapshot of `records` the crash-safe way: into `NAME.tmp`, fsynced, renamed to
 * `NAME`, directory fsynced. Until the rename the previous snapshots stand; after it the new
 * one is whole on disk. Records are immutable, so the array may be written over many ticks. On failure the temp file is removed and the error thrown.
 */
export async function writeSnapshot(
  disk: Disk,
  dir: string,
  meta: SnapshotMeta,
  records: readonly InstanceRecord[],
): Promise<WrittenSnapshot> {
  const name = snapshotFileName(meta.seq);
  const temp = pathIn(dir, `${name}.tmp`);
  const fd = disk.create(temp);
  let sizeBytes = 0;
  let open = true;
  try {
    const start = encodeFileStart({ type: 'snapshot', format: FORMAT_VERSION, ...meta, records: records.length });
    disk.append(fd, start);
    sizeBytes += start.length;
    for (let from = 0; from < records.length; from += RECORDS_PER_CHUNK) {
      const frames = records.slice(from, from + RECORDS_PER_CHUNK).map(encodeRecordFrame);
      const chunk = Buffer.concat(frames);
      disk.append(fd, chunk);
      sizeBytes += chunk.length;
      await yieldToEventLoop();
    }
    const trailer = encodeTrailer(records.length);
    disk.append(fd, trailer);
    sizeBytes += trailer.length;
    await disk.sync(fd);
    open = false;
    await disk.closeFile(fd);
    disk.rename(temp, pathIn(dir, name));
    await disk.syncDirectory(dir);
    return { name, records: records.length, sizeBytes };
  } catch (error) {
    if (open) {
      try {
        disk.close(fd);
      } catch {
        // Already unusable.
      }
    }
    try {
      disk.remove(temp);
    } catch {
      // Removed at the next start.
    }
    throw error;
  }
}
