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
 *
 * Opening, rolling and closing a segment run on libuv's thread pool too (the fsyncs they need
 * can take seconds on a busy disk): while one runs there is no segment to write to, so what
 * is appended meanwhile waits in `pending`, in order, and goes to the next segment; no fsync
 * starts meanwhile either (`switching`).
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
  /** Set while a segment is being opened, rolled or closed: nothing is written or fsynced meanwhile. */
  private switching: Promise<void> | null = null;
  /** Switches waiting for an fsync to end: no further fsync starts meanwhile (the switch fsyncs what was written). */
  private switchesWaiting = 0;
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

  /**
   * Creates the first segment, `seq` (header fsynced, directory entry fsynced), off the event
   * loop: a peer opens it after its HTTP server listens, while it answers probes and 503s.
   * What is appended before it resolves waits and goes to it. Rejects with the disk error.
   */
  open(seq: number): Promise<void> {
    if (this.fd >= 0 || this.switching !== null) return Promise.reject(new Error('the log is already open'));
    const end = this.startSwitch();
    return this.startSegment(seq)
      .finally(end)
      .then(() => this.scheduleFlush());
  }

  /** Queues a record; it reaches the file in this turn's check phase, or once a roll in progress is done. */
  append(record: InstanceRecord): void {
    this.appended += 1;
    if (this.failure !== null) return;
    const frame = encodeRecordFrame(record);
    this.pending.push(frame);
    this.pendingBytes += frame.length;
    this.totalBytes += frame.length;
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || (this.pending.length === 0 && this.waiters.length === 0)) return;
    this.flushScheduled = true;
    setImmediate(() => this.flushQueued());
  }

  /** The scheduled flush: writes what the turn queued, then releases or fsyncs for its waiters. */
  private flushQueued(): void {
    this.flushScheduled = false;
    this.flush();
    if (this.waitsForSync) this.startSync();
    else this.release(this.written);
  }

  /** Writes what is queued to the file, in one write(); keeps it queued while segments are switched. */
  flush(): void {
    if (this.switching === null) this.writePending();
  }

  private writePending(): void {
    if (this.pending.length === 0 || this.failure !== null || this.fd < 0) return;
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
      // Written already (in an earlier turn) but not fsynced: only the fsync is missing.
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
   * Closes the current segment (fsynced) and opens segment `seq`, without blocking the event
   * loop. Every record written before resolves once fsynced; what is appended from the moment
   * this is called (queued ones included) goes to the new segment, in order, once it is open.
   * Throws (and fails the log) on a disk error.
   */
  async roll(seq: number): Promise<void> {
    const end = await this.afterIdle();
    try {
      if (this.failure !== null) throw this.failure;
      await this.finishSegment();
      await this.startSegment(seq);
    } catch (error) {
      this.fail(error, 'sync');
      throw error;
    } finally {
      end();
    }
    this.scheduleFlush();
  }

  /**
   * After a failure: drops the failed segment (its good part stays on disk) and starts segment
   * `seq`. Records dropped while failed are not in the log; the caller covers them with a
   * snapshot. Throws when the disk still refuses.
   */
  async reopen(seq: number): Promise<void> {
    const end = await this.afterIdle();
    try {
      const fd = this.fd;
      this.fd = -1;
      if (fd >= 0) await this.disk.closeFile(fd).catch(() => undefined); // the descriptor is gone either way
      await this.startSegment(seq);
    } finally {
      end();
    }
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

  /** Flushes, fsyncs and closes the segment; refuses every append after it. Throws the disk error, if any. */
  async close(): Promise<void> {
    const end = await this.afterIdle();
    try {
      this.writePending();
      if (this.fd < 0) return;
      if (this.failure === null) {
        await this.finishSegment();
      } else {
        const fd = this.fd;
        this.fd = -1;
        await this.disk.closeFile(fd);
      }
    } finally {
      const closed = new Error('the log was closed');
      this.failure ??= closed;
      this.rejectWaiters(closed);
      end();
    }
  }

  /**
   * Waits until no fsync or segment switch is in flight, then marks a switch under way: in the
   * same synchronous step as the last check, so that no fsync can start in between (it would
   * run on a descriptor being closed). Returns the function that ends the switch.
   */
  private async afterIdle(): Promise<() => void> {
    this.switchesWaiting += 1;
    try {
      for (;;) {
        const busy = this.syncing ?? this.switching;
        if (busy === null) return this.startSwitch();
        await busy.catch(() => undefined);
      }
    } finally {
      this.switchesWaiting -= 1;
    }
  }

  private startSwitch(): () => void {
    let end!: () => void;
    this.switching = new Promise<void>((resolve) => (end = resolve));
    return () => {
      this.switching = null;
      end();
    };
  }

  /** Fsyncs what was written to the current segment (unless it is already), releases its waiters, closes it. */
  private async finishSegment(): Promise<void> {
    const fd = this.fd;
    if (fd < 0) return;
    if (this.durable < this.written) await this.disk.sync(fd);
    this.markDurable(this.written);
    this.release(this.written);
    this.fd = -1;
    await this.disk.closeFile(fd);
  }

  /** Creates segment `seq` with its header, both fsynced with the directory entry, and writes to it from now on. */
  private async startSegment(seq: number): Promise<void> {
    const start = encodeFileStart({ type: 'segment', format: FORMAT_VERSION, seq, peerId: this.init.peerId, createdAtMs: this.init.nowMs() });
    this.fd = await this.disk.createDurably(pathIn(this.init.dir, segmentFileName(seq)), start);
    this.seq = seq;
    this.segmentBytes = start.length;
  }

  private startSync(): void {
    if (this.syncing || this.switching || this.switchesWaiting > 0 || this.failure !== null || this.fd < 0) return;
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
