import { sleep, type Clock, type TimerHandle } from '../clock/clock.js';
import type { HybridClock } from '../clock/hlc.js';
import type { StorageSettings } from '../config/settings.js';
import { RegistryError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { InstanceStore, StoreChange } from '../registry/store.js';
import { DataDirError, describeDiskError, errorCode, pathIn, type Disk } from './disk.js';
import type { Durability } from './durability.js';
import { nextSeq, parseFileName, planCleanup, segmentFileName, snapshotFileName } from './files.js';
import { FORMAT_VERSION } from './format.js';
import { DataDirLock, isPidAlive, LOCK_REFRESH_MS, processIdentity, type LockIdentity } from './lock.js';
import { recoverDataDir, type FileReport } from './recovery.js';
import { restoreRecords, type RestoreTarget } from './restore.js';
import { RESOLVED as RESOLVED_BY_LOG, SegmentLog } from './segment-log.js';
import { collectRecords, writeSnapshot } from './snapshot.js';
import { periodicSyncMs, snapshotDue } from './sync-policy.js';

export interface PersistenceComponents {
  clock: Clock;
  logger: Logger;
  store: InstanceStore;
  /** Loads the data dir's records into the store at start: the registry, the store's one writer. */
  registry: RestoreTarget;
  hlc: HybridClock;
  disk: Disk;
  /** Defaults to `kill -0`; tests stub it. */
  isPidAlive?: (pid: number) => boolean;
  /** Defaults to this process; tests pass another to play a second process. */
  identity?: LockIdentity;
}

export interface PersistenceInit extends StorageSettings {
  dataDir: string;
  peerId: string;
  tombstoneTtlMs: number;
}

/** How often the snapshot schedule and the storage retry are looked at. */
const SCHEDULE_TICK_MS = 1_000;

/** The answer for a write that could not be made durable. */
export function storageError(error: unknown): RegistryError {
  return new RegistryError(
    'REG_ERR_STORAGE',
    `the data dir cannot take writes: ${describeDiskError(error)}; writes are refused until it can, reads still work`,
  );
}

/**
 * A peer's data dir: loads it into the store at start, then appends every write (local or
 * replicated; never a lease-only change) to the log, writes snapshots on a schedule and
 * deletes the log behind them. Implements the `Durability` seam the write routes wait on.
 * On a disk error it refuses writes, logs at error, and retries by writing a fresh snapshot
 * every `retryIntervalMs` until the disk works again; reads are never affected.
 */
export class Persistence implements Durability {
  private state: 'new' | 'opening' | 'open' | 'closed' = 'new';
  private readonly log: SegmentLog;
  private readonly lock: DataDirLock;
  private readonly logger: Logger;
  private timers: TimerHandle[] = [];
  private unsubscribe: (() => void) | null = null;
  private failure: { error: unknown; sinceMs: number } | null = null;
  private lockLost = false;
  private snapshotting: Promise<void> | null = null;
  private retrying = false;
  private lastRetryAtMs = 0;
  private maxSeq = 0;
  private lastSnapshot = { atMs: 0, bytes: 0, records: 0 };
  private damaged: FileReport[] = [];

  constructor(
    private readonly components: PersistenceComponents,
    private readonly init: PersistenceInit,
  ) {
    const { clock, disk } = components;
    this.logger = components.logger.child({ component: 'persistence' });
    this.log = new SegmentLog(disk, {
      dir: init.dataDir,
      peerId: init.peerId,
      syncPolicy: init.syncPolicy,
      nowMs: () => clock.nowMs(),
      onFailure: (error, during) => this.onLogFailure(error, during),
    });
    this.lock = new DataDirLock(
      { disk, isPidAlive: components.isPidAlive ?? isPidAlive, nowMs: () => clock.nowMs() },
      init.dataDir,
      components.identity ?? processIdentity(),
    );
  }

  get restored(): boolean {
    return this.state === 'open';
  }

  assertWritable(): void {
    if (this.failure) throw storageError(this.failure.error);
  }

  mark(): number {
    return this.log.mark();
  }

  barrier(mark: number): Promise<void> | undefined {
    if (this.log.mark() === mark) return undefined;
    const pending = this.log.barrier(mark);
    if (pending === RESOLVED_BY_LOG) return undefined;
    return pending.catch((error: unknown) => {
      throw storageError(error);
    });
  }

  /**
   * Takes the data dir (lock), loads it into the store, and starts logging. A data dir that
   * cannot be used at all throws DataDirError (the process exits 2); damage inside files does
   * not: it is cut off, logged with its offset, and covered by a fresh snapshot before ready.
   */
  async open(): Promise<void> {
    if (this.state !== 'new') throw new Error('the data dir is already open');
    this.state = 'opening';
    const { disk } = this.components;
    const dir = this.init.dataDir;
    try {
      disk.makeDir(dir);
    } catch (error) {
      throw new DataDirError(dir, `cannot create the data dir: ${describeDiskError(error)}`);
    }
    const takenOver = await this.lock.acquireWithin(
      this.init.lockWaitMs,
      (ms) => sleep(this.components.clock, ms),
      (why) => this.logger.warn({ dataDir: dir, why, waitMs: this.init.lockWaitMs }, 'data dir locked: waiting for its holder to exit'),
    );
    if (takenOver) this.logger.warn({ dataDir: dir, why: takenOver }, 'data dir lock taken over');
    try {
      await this.load();
      if (this.state !== 'opening') return; // closed while the first segment was being created
      if (this.damaged.length > 0) {
        await this.snapshotNow('damage found at start').catch((error: unknown) => {
          throw new DataDirError(dir, `cannot write a snapshot: ${describeDiskError(error)}`);
        });
      }
    } catch (error) {
      this.unsubscribe?.();
      await this.log.close().catch(() => undefined);
      this.lock.release();
      this.state = 'closed';
      throw error;
    }
    if (this.state !== 'opening') return; // closed while the recovery snapshot was written
    this.startTimers();
    this.state = 'open';
  }

  /** Stops logging: waits for a snapshot in progress, flushes and fsyncs the log, releases the lock. */
  async close(): Promise<void> {
    if (this.state === 'closed' || this.state === 'new') {
      this.state = 'closed';
      return;
    }
    this.state = 'closed';
    for (const timer of this.timers) timer.cancel();
    this.timers = [];
    this.unsubscribe?.();
    this.unsubscribe = null;
    await this.snapshotting?.catch(() => undefined);
    try {
      await this.log.close();
    } catch (error) {
      this.logger.error({ err: error, dataDir: this.init.dataDir }, 'cannot flush the log at shutdown');
    }
    if (!this.lockLost) this.lock.release();
    this.logger.info({ dataDir: this.init.dataDir }, 'data dir closed');
  }

  /** Writes a snapshot now (also used by tests and the benchmark); shares one already under way. */
  snapshotNow(reason: string): Promise<void> {
    if (this.snapshotting) return this.snapshotting;
    if (this.state !== 'open' && this.state !== 'opening') return Promise.reject(new Error('the data dir is not open'));
    this.snapshotting = this.writeSnapshot(reason).finally(() => {
      this.snapshotting = null;
    });
    return this.snapshotting;
  }

  private async load(): Promise<void> {
    const { disk, store, hlc, clock, registry } = this.components;
    const dir = this.init.dataDir;
    const startedAtMs = clock.nowMs();
    let recovery;
    try {
      recovery = recoverDataDir(disk, dir);
    } catch (error) {
      throw new DataDirError(dir, `cannot read the data dir: ${describeDiskError(error)}`);
    }
    if (recovery.unsupported) {
      const { name, format } = recovery.unsupported;
      throw new DataDirError(dir, `${name} has format ${format}, this peer reads format ${FORMAT_VERSION}: it was written by a newer version`);
    }
    for (const temp of recovery.temps) disk.remove(pathIn(dir, temp));
    this.reportDamage(recovery.files, recovery.snapshotSeq);
    const writers = new Set(recovery.files.map((file) => file.header?.peerId).filter((id) => id !== undefined));
    writers.delete(this.init.peerId);
    if (writers.size > 0) {
      this.logger.warn({ dataDir: dir, writtenBy: [...writers], peer: this.init.peerId }, 'data dir was written by another peer id');
    }
    const summary = restoreRecords(registry, hlc, recovery.records.values(), {
      nowMs: clock.nowMs(),
      tombstoneTtlMs: this.init.tombstoneTtlMs,
    });
    this.maxSeq = nextSeq(recovery.usedSeqs);
    // Logging starts in the same tick as the restore, before the first segment exists: a write
    // that comes in while it is being created (a replicated one) waits in the log and goes to it.
    this.unsubscribe = store.onChange((change) => this.onStoreChange(change));
    this.lastSnapshot = { atMs: clock.nowMs(), bytes: this.log.bytesAppended, records: this.log.mark() };
    try {
      // Not blocking: the HTTP server already listens (peer.ts), and answers probes and 503s meanwhile.
      await this.log.open(this.maxSeq);
    } catch (error) {
      throw new DataDirError(dir, `cannot write to the data dir: ${describeDiskError(error)}`);
    }
    this.removeEmptySegments(recovery.files);
    this.logger.info(
      {
        dataDir: dir,
        snapshot: recovery.snapshotSeq === null ? null : snapshotFileName(recovery.snapshotSeq),
        segments: recovery.files.filter((file) => file.kind === 'segment').length,
        instances: summary.instances,
        tombstones: summary.tombstones,
        expiredTombstones: summary.expiredTombstones,
        damagedFiles: this.damaged.length,
        syncPolicy: this.init.syncPolicy,
        ms: clock.nowMs() - startedAtMs,
      },
      'data dir loaded',
    );
  }

  /**
   * Every start opens a new segment; one left empty (a start with no write after it) holds
   * nothing, so it goes rather than pile up over restarts. Best effort.
   */
  private removeEmptySegments(files: readonly FileReport[]): void {
    for (const file of files) {
      if (file.kind !== 'segment' || file.role !== 'used' || file.records > 0 || file.damage !== null) continue;
      try {
        this.components.disk.remove(pathIn(this.init.dataDir, file.name));
      } catch {
        // Harmless: it is read (as empty) again at the next start.
      }
    }
  }

  private reportDamage(files: readonly FileReport[], snapshotSeq: number | null): void {
    this.damaged = files.filter((file) => file.damage !== null && file.role !== 'skipped');
    for (const file of this.damaged) {
      const damage = file.damage!;
      const fields = {
        dataDir: this.init.dataDir,
        file: file.name,
        offset: damage.offset,
        reason: damage.reason,
        droppedBytes: damage.droppedBytes,
        recordsKept: file.records,
      };
      if (file.kind === 'snapshot') {
        const fallback = snapshotSeq === null ? 'the log alone' : snapshotFileName(snapshotSeq);
        this.logger.warn({ ...fields, fallback }, 'snapshot damaged: falling back to the previous one');
      } else {
        this.logger.warn(fields, 'log segment damaged: cut at offset');
      }
    }
  }

  private onStoreChange(change: StoreChange): void {
    if (change.kind !== 'write' || change.origin === 'restore') return;
    this.log.append(change.entry.record);
    if (!this.snapshotting && !this.failure && this.isSnapshotDue()) {
      this.snapshotInBackground('log size');
    }
  }

  private isSnapshotDue(): boolean {
    return snapshotDue(
      {
        bytesSinceSnapshot: this.log.bytesAppended - this.lastSnapshot.bytes,
        recordsSinceSnapshot: this.log.mark() - this.lastSnapshot.records,
        msSinceSnapshot: this.components.clock.nowMs() - this.lastSnapshot.atMs,
      },
      this.init,
    );
  }

  private snapshotInBackground(reason: string): void {
    this.snapshotNow(reason).catch((error: unknown) => {
      this.logger.warn({ err: error, dataDir: this.init.dataDir, reason: describeDiskError(error) }, 'snapshot failed');
    });
  }

  private async writeSnapshot(reason: string): Promise<void> {
    const { disk, store, clock } = this.components;
    const seq = ++this.maxSeq;
    await this.log.roll(seq);
    // Started in the same tick as the roll's end: every write is in this snapshot or in a
    // segment >= seq (collected in slices; see collectRecords for a write made meanwhile).
    const startedAtMs = clock.nowMs();
    this.lastSnapshot = { atMs: startedAtMs, bytes: this.log.bytesAppended, records: this.log.mark() };
    const records = await collectRecords(store.entries());
    const written = await writeSnapshot(disk, this.init.dataDir, { seq, peerId: this.init.peerId, createdAtMs: startedAtMs }, records);
    this.setAsideDamaged();
    await this.removeObsoleteFiles();
    this.logger.info(
      { dataDir: this.init.dataDir, file: written.name, records: written.records, bytes: written.sizeBytes, reason, ms: clock.nowMs() - startedAtMs },
      'snapshot written',
    );
  }

  /** Renames the damaged files found at start to `NAME.damaged`: kept for inspection, never read again. */
  private setAsideDamaged(): void {
    const { disk } = this.components;
    for (const file of this.damaged.splice(0)) {
      const path = pathIn(this.init.dataDir, file.name);
      try {
        disk.rename(path, `${path}.damaged`);
        this.logger.info({ dataDir: this.init.dataDir, file: file.name, as: `${file.name}.damaged` }, 'damaged file set aside');
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') this.logger.warn({ err: error, file: file.name }, 'cannot set a damaged file aside');
      }
    }
  }

  private async removeObsoleteFiles(): Promise<void> {
    const { disk } = this.components;
    const dir = this.init.dataDir;
    try {
      const snapshots: number[] = [];
      const segments: number[] = [];
      for (const name of disk.list(dir)) {
        const parsed = parseFileName(name);
        if (parsed?.kind === 'snapshot') snapshots.push(parsed.seq);
        else if (parsed?.kind === 'segment') segments.push(parsed.seq);
      }
      const obsolete = planCleanup(snapshots, segments);
      for (const seq of obsolete.segments) disk.remove(pathIn(dir, segmentFileName(seq)));
      for (const seq of obsolete.snapshots) disk.remove(pathIn(dir, snapshotFileName(seq)));
      if (obsolete.segments.length + obsolete.snapshots.length > 0) await disk.syncDirectory(dir);
    } catch (error) {
      this.logger.warn({ err: error, dataDir: dir }, 'cannot remove obsolete log segments or snapshots');
    }
  }

  private startTimers(): void {
    const { clock } = this.components;
    const syncMs = periodicSyncMs(this.init.syncPolicy, this.init.syncIntervalMs);
    if (syncMs !== null) this.timers.push(clock.setInterval(() => void this.log.syncWritten(), syncMs));
    this.timers.push(clock.setInterval(() => this.onScheduleTick(), Math.min(SCHEDULE_TICK_MS, this.init.retryIntervalMs)));
    this.timers.push(clock.setInterval(() => this.refreshLock(), LOCK_REFRESH_MS));
  }

  private onScheduleTick(): void {
    const nowMs = this.components.clock.nowMs();
    if (this.failure) {
      if (nowMs - this.lastRetryAtMs >= this.init.retryIntervalMs) {
        this.lastRetryAtMs = nowMs;
        void this.retry();
      }
      return;
    }
    if (!this.snapshotting && this.isSnapshotDue()) this.snapshotInBackground('interval');
  }

  private onLogFailure(error: unknown, during: 'append' | 'sync'): void {
    this.failure ??= { error, sinceMs: this.components.clock.nowMs() };
    this.lastRetryAtMs = this.components.clock.nowMs();
    this.logger.error(
      { err: error, dataDir: this.init.dataDir, during, reason: describeDiskError(error) },
      'storage failed: writes are refused until the data dir works again',
    );
  }

  /** Tries to leave the failed state: a new segment, then a snapshot of everything (covering what could not be logged). */
  private async retry(): Promise<void> {
    if (!this.failure || this.lockLost || this.retrying || this.snapshotting) return;
    this.retrying = true;
    try {
      await this.log.reopen(++this.maxSeq);
      await this.snapshotNow('recovery after a storage failure');
      const downMs = this.components.clock.nowMs() - this.failure.sinceMs;
      this.failure = null;
      this.logger.info({ dataDir: this.init.dataDir, downMs }, 'storage recovered: writes are accepted again');
    } catch (error) {
      this.logger.warn({ dataDir: this.init.dataDir, reason: describeDiskError(error) }, 'storage still failing');
    } finally {
      this.retrying = false;
    }
  }

  private refreshLock(): void {
    if (this.lockLost) return;
    const problem = this.lock.refresh();
    if (!problem) return;
    if (!problem.lost) {
      this.logger.warn({ dataDir: this.init.dataDir, problem: problem.problem }, 'cannot refresh the data dir lock');
      return;
    }
    this.lockLost = true;
    const error = new Error(`the data dir lock was lost: ${problem.problem}`);
    this.log.halt(error);
    this.failure ??= { error, sinceMs: this.components.clock.nowMs() };
    this.logger.error({ dataDir: this.init.dataDir, problem: problem.problem }, 'data dir lock lost: writes are refused until restart');
  }
}
