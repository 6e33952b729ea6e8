import type { SyncPolicy } from '../config/settings.js';
import type { InstanceRecord } from '../registry/types.js';
import { pathIn, type Disk } from './disk.js';
import { segmentFileName } from './files.js';
import { encodeFileStart, encodeRecordFrame, FORMAT_VERSION } from './format.js';
import { barrierWaitsForSync } from './sync-policy.js';

export interface SegmentLogInit {
  dir: string;
  peerId: string;
  syncPolicy: SyncPolicy;
  nowMs: () => number;
  /** Called once when an append or an fsync fails; the log then refuses everything until `reopen`. */
  onFailure: (error: unknown, during: 'append' | 'sync') => void;
}

interface Waiter {
  /** The `appended` count the waiter needs written (or durable, under `always`). */
  target: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** What `barrier` answers when there is nothing to wait for (callers may compare against it). */
export const RESOLVED = Promise.resolve();

/**
 * The write-ahead log: one segment file open for appending. Records are encoded at once and
 * written to the file in the check phase of the event loop (`setImmediate`): the requests
 * that libuv handed over in one turn share one write(). A waiter is released once its
 * records are written (`interval`, `never`) or fsynced (`always`); fsyncs run off the event
 * loop, and each releases every waiter whose records were written when it started (group
 * commit). Counters are in records appended since the log was created:
 * `appended` >= `written` >= `durable`.
 */
export class SegmentLog {
  private fd = -1;
  private seq = 0;
  private segmentBytes = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private flushScheduled = false;
  private appended = 0;
  private written = 0;
  private durable = 0;
  private totalBytes = 0;
  private syncing: Promise<void> | null = null;
  /** Released when their records are durable under the policy (written, or fsynced for `always`). */
  private waiters: Waiter[] = [];
  private readonly waitsForSync: boolean;
  private failure: unknown = null;

  constructor(
    private readonly disk: Disk,
    private readonly init: SegmentLogInit,
  ) {
    this.waitsForSync = barrierWaitsForSync(init.syncPolicy);
  }

  /** The number of the segment being written. */
  get segmentSeq(): number {
    return this.seq;
  }

  /** Bytes appended since the log was created (pending ones included); drives the snapshot schedule. */
  get bytesAppended(): number {
    return this.totalBytes;
  }

  /** Records appended so far: a mark for `barrier`. */
  mark(): number {
    return this.appended;
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  /** Creates segment `seq` (header fsynced, directory entry fsynced) and appends to it from now on. Throws. */
  open(seq: number): void {
    const path = pathIn(this.init.dir, segmentFileName(seq));
    const fd = this.disk.create(path);
    try {
      const start = encodeFileStart({ type: 'segment', format: FORMAT_VERSION, seq, peerId: this.init.peerId, createdAtMs: this.init.nowMs() });
      this.disk.append(fd, start);
      this.disk.syncNow(fd);
      this.disk.syncDir(this.init.dir);
      this.fd = fd;
      this.seq = seq;
      this.segmentBytes = start.length;
    } catch (error) {
      // A segment without a whole header would read as damage at the next start: remove it.
      try {
        this.disk.close(fd);
        this.disk.remove(path);
      } catch {
        // The disk refuses even that; recovery reports the file and cuts it.
      }
      throw error;
    }
  }

  /** Queues a record; it reaches the file in this turn's check phase, or at a roll or close. */
  append(record: InstanceRecord): void {
    this.appended += 1;
    if (this.failure !== null) return;
    const frame = encodeRecordFrame(record);
    this.pending.push(frame);
    this.pendingBytes += frame.length;
    this.totalBytes += frame.length;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flushQueued());
    }
  }

  /** The scheduled flush: writes what the turn queued, then releases or fsyncs for its waiters. */
  private flushQueued(): void {
    this.flushScheduled = false;
    this.flush();
    if (this.waitsForSync) this.startSync();
    else this.release(this.written);
  }

  /** Writes what is queued to the file, in one write(). */
  flush(): void {
    if (this.pending.length === 0 || this.failure !== null) return;
    const data = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    const count = this.pending.length;
    this.pending = [];
    this.pendingBytes = 0;
    try {
      this.disk.append(this.fd, data);
      this.segmentBytes += data.length;
      this.written += count;
    } catch (error) {
      // A partial frame at the end would hide every later one from recovery: cut it off.
      try {
        this.disk.truncate(this.fd, this.segmentBytes);
      } catch {
        // The next start reports it as a torn tail; the records behind it go to a new segment.
      }
      this.fail(error, 'append');
    }
  }

  /**
   * Resolves when every record appended since `mark` is durable under the sync policy: written
   * to the file (`interval`, `never`) or fsynced too (`always`). Rejects with the disk error
   * when the log failed. Resolves at once when nothing was appended since `mark`.
   */
  barrier(mark: number): Promise<void> {
    if (this.appended === mark) return RESOLVED;
    if (this.failure !== null) return Promise.reject(this.failure);
    const target = this.appended;
    if ((this.waitsForSync ? this.durable : this.written) >= target) return RESOLVED;
    return new Promise((resolve, reject) => {
      this.waiters.push({ target, resolve, reject });
      // Written already but not fsynced (a roll flushed it): only the fsync is missing.
      if (this.waitsForSync && this.written >= target) this.startSync();
    });
  }

  /** Flushes and fsyncs what was written so far (the `interval` timer); resolves when done or failed. */
  async syncWritten(): Promise<void> {
    this.flush();
    this.startSync();
    await this.syncing?.catch(() => undefined);
  }

  /**
   * Closes the current segment (flushed and fsynced) and opens segment `seq`; what is appended
   * from the moment this resolves goes to the new one. Throws (and fails the log) on a disk error.
   */
  async roll(seq: number): Promise<void> {
    await this.idle();
    this.flush();
    if (this.failure !== null) throw this.failure;
    try {
      this.disk.syncNow(this.fd);
      this.markDurable(this.written);
      this.release(this.written);
      this.disk.close(this.fd);
      this.fd = -1;
      this.open(seq);
    } catch (error) {
      this.fail(error, 'sync');
      throw error;
    }
  }

  /**
   * After a failure: drops the failed segment (its good part stays on disk) and starts segment
   * `seq`. Records dropped while failed are not in the log; the caller covers them with a
   * snapshot. Throws when the disk still refuses.
   */
  async reopen(seq: number): Promise<void> {
    await this.idle();
    if (this.fd >= 0) {
      try {
        this.disk.close(this.fd);
      } catch {
        // The descriptor is gone either way.
      }
      this.fd = -1;
    }
    this.open(seq);
    this.pending = [];
    this.pendingBytes = 0;
    this.written = this.appended;
    this.durable = this.appended;
    this.failure = null;
  }

  /** Stops the log for good (the data dir is no longer ours): everything appended from now on is refused. */
  halt(error: unknown): void {
    this.fail(error, 'append');
  }

  /** Flushes, fsyncs and closes the segment. Throws the disk error, if any. */
  async close(): Promise<void> {
    await this.idle();
    this.flush();
    const fd = this.fd;
    this.fd = -1;
    if (fd < 0) return;
    try {
      if (this.failure === null) {
        this.disk.syncNow(fd);
        this.markDurable(this.written);
        this.release(this.written);
      }
    } finally {
      this.disk.close(fd);
      this.rejectWaiters(new Error('the log was closed'));
    }
  }

  private async idle(): Promise<void> {
    while (this.syncing) await this.syncing.catch(() => undefined);
  }

  private startSync(): void {
    if (this.syncing || this.failure !== null || this.fd < 0) return;
    const target = this.written;
    if (this.durable >= target) {
      this.markDurable(target);
      return;
    }
    this.syncing = this.disk.sync(this.fd).then(
      () => {
        this.syncing = null;
        this.markDurable(target);
        if (this.waiters.length > 0) this.startSync();
      },
      (error: unknown) => {
        this.syncing = null;
        this.fail(error, 'sync');
      },
    );
  }

  private markDurable(count: number): void {
    this.durable = Math.max(this.durable, count);
    if (this.waitsForSync) this.release(this.durable);
  }

  /** Resolves every waiter whose records are within the first `count`. */
  private release(count: number): void {
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (waiter.target <= count) waiter.resolve();
      else still.push(waiter);
    }
    this.waiters = still;
  }

  private fail(error: unknown, during: 'append' | 'sync'): void {
    if (this.failure !== null) return;
    this.failure = error;
    this.pending = [];
    this.pendingBytes = 0;
    this.rejectWaiters(error);
    this.init.onFailure(error, during);
  }

  private rejectWaiters(error: unknown): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.reject(error);
  }
}
