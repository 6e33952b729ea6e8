import { basename, dirname } from 'node:path';
import type { Disk } from '../../src/persistence/disk.js';

interface Inode {
  /** What reads see (the page cache). */
  data: Buffer;
  /** What survives a power loss: the content at the last fsync. */
  durableData: Buffer;
  mtimeMs: number;
}

type Fault = 'ENOSPC' | 'EROFS' | 'EIO' | 'EACCES' | 'ENOTDIR';

function systemError(code: string, op: string, path: string): NodeJS.ErrnoException {
  const error = new Error(`${code}: simulated, ${op} '${path}'`) as NodeJS.ErrnoException;
  error.code = code;
  return error;
}

/**
 * An in-memory disk with the failure modes persistence must survive:
 * - `powerLoss()`: every file and directory entry reverts to its last fsynced state (data
 *   only written, or a rename whose directory was not fsynced, is gone);
 * - `capacityBytes`: appends past it write what fits, then fail with ENOSPC (a torn write);
 * - `readOnly`: every change fails with EROFS; `syncFault`: fsyncs fail with that code;
 * - `holdSyncs`: fsyncs of `sync()` wait until `releaseSyncs()` (to see group commit);
 * - `holdFileOps`: `createDurably`, `closeFile` and `syncDirectory` wait, with nothing done
 *   yet, until `releaseFileOps()` (to stop a segment roll between its steps). Not held, they
 *   take effect at the call and settle a turn later, as a thread-pool callback does.
 * `createDurably` is one step: its directory fsync comes after its fdatasync, so a power loss
 * finds the file with its first bytes or not at all. Paths are plain strings; directories exist
 * once made.
 */
export class SimDisk implements Disk {
  private readonly dirs = new Set<string>();
  private entries = new Map<string, Inode>();
  private durableEntries = new Map<string, Inode>();
  private readonly fds = new Map<number, { path: string; inode: Inode }>();
  private nextFd = 3;
  private heldSyncs: (() => void)[] = [];
  private heldFileOps: (() => void)[] = [];
  capacityBytes = Number.POSITIVE_INFINITY;
  readOnly = false;
  syncFault: Fault | null = null;
  holdSyncs = false;
  holdFileOps = false;
  /** Paths whose reads fail with EIO (a bad sector). */
  readonly unreadable = new Set<string>();
  /** Fsyncs of files (async and blocking) so far. */
  syncCount = 0;
  /** Appends (write calls) so far. */
  appendCount = 0;

  constructor(private readonly nowMs: () => number = () => 0) {}

  /** Simulates a power loss: only what was fsynced survives; open files are gone. */
  powerLoss(): void {
    const survivors = new Map<string, Inode>();
    for (const [path, inode] of this.durableEntries) {
      inode.data = Buffer.from(inode.durableData);
      survivors.set(path, inode);
    }
    this.entries = survivors;
    this.durableEntries = new Map(survivors);
    this.fds.clear();
    this.heldSyncs = [];
    this.heldFileOps = [];
  }

  /** Simulates a crash of the process only: open files are closed, the page cache survives; held operations never happen. */
  processCrash(): void {
    this.fds.clear();
    this.heldSyncs = [];
    this.heldFileOps = [];
  }

  releaseSyncs(): void {
    const held = this.heldSyncs;
    this.heldSyncs = [];
    for (const release of held) release();
  }

  get pendingSyncs(): number {
    return this.heldSyncs.length;
  }

  /** Runs the `count` oldest held file operations (all by default). */
  releaseFileOps(count = Number.POSITIVE_INFINITY): void {
    const held = this.heldFileOps.splice(0, count);
    for (const release of held) release();
  }

  get pendingFileOps(): number {
    return this.heldFileOps.length;
  }

  usedBytes(): number {
    let total = 0;
    for (const inode of new Set(this.entries.values())) total += inode.data.length;
    return total;
  }

  /** Test access: the bytes of a file, or undefined. */
  bytes(path: string): Buffer | undefined {
    return this.entries.get(path)?.data;
  }

  /** Test access: replaces a file's content, as damage on the medium would (durable at once). */
  setBytes(path: string, data: Buffer): void {
    const inode = this.entries.get(path);
    if (!inode) throw new Error(`no file ${path}`);
    inode.data = Buffer.from(data);
    inode.durableData = Buffer.from(data);
  }

  makeDir(dir: string): void {
    if (this.entries.has(dir)) throw systemError('ENOTDIR', 'mkdir', dir);
    if (!this.dirs.has(dir) && this.readOnly) throw systemError('EROFS', 'mkdir', dir);
    this.dirs.add(dir);
    for (let d = dir; d !== dirname(d); d = dirname(d)) this.dirs.add(dirname(d));
  }

  list(dir: string): string[] {
    if (!this.dirs.has(dir)) throw systemError('ENOENT', 'scandir', dir);
    return [...this.entries.keys()].filter((path) => dirname(path) === dir).map((path) => basename(path));
  }

  readFile(path: string): Buffer {
    const inode = this.entries.get(path);
    if (!inode) throw systemError('ENOENT', 'open', path);
    if (this.unreadable.has(path)) throw systemError('EIO', 'read', path);
    return Buffer.from(inode.data);
  }

  stat(path: string): { sizeBytes: number; mtimeMs: number } | null {
    const inode = this.entries.get(path);
    return inode ? { sizeBytes: inode.data.length, mtimeMs: inode.mtimeMs } : null;
  }

  create(path: string): number {
    if (!this.dirs.has(dirname(path))) throw systemError('ENOENT', 'open', path);
    if (this.entries.has(path)) throw systemError('EEXIST', 'open', path);
    this.refuseIfReadOnly('open', path);
    const inode: Inode = { data: Buffer.alloc(0), durableData: Buffer.alloc(0), mtimeMs: this.nowMs() };
    this.entries.set(path, inode);
    const fd = this.nextFd++;
    this.fds.set(fd, { path, inode });
    return fd;
  }

  append(fd: number, data: Buffer): void {
    const file = this.file(fd, 'write');
    this.refuseIfReadOnly('write', file.path);
    this.appendCount += 1;
    const room = Math.max(0, this.capacityBytes - this.usedBytes());
    const fits = Math.min(room, data.length);
    file.inode.data = Buffer.concat([file.inode.data, data.subarray(0, fits)]);
    file.inode.mtimeMs = this.nowMs();
    if (fits < data.length) throw systemError('ENOSPC', 'write', file.path);
  }

  truncate(fd: number, sizeBytes: number): void {
    const file = this.file(fd, 'ftruncate');
    this.refuseIfReadOnly('ftruncate', file.path);
    file.inode.data = file.inode.data.subarray(0, sizeBytes);
  }

  sync(fd: number): Promise<void> {
    const file = this.file(fd, 'fdatasync');
    return new Promise((resolve, reject) => {
      const run = () => {
        if (this.syncFault) {
          reject(systemError(this.syncFault, 'fdatasync', file.path));
          return;
        }
        this.syncCount += 1;
        file.inode.durableData = Buffer.from(file.inode.data);
        resolve();
      };
      if (this.holdSyncs) this.heldSyncs.push(run);
      else setImmediate(run);
    });
  }

  createDurably(path: string, firstBytes: Buffer): Promise<number> {
    return this.fileOp(() => {
      const fd = this.create(path);
      try {
        this.append(fd, firstBytes);
        const file = this.file(fd, 'fdatasync');
        if (this.syncFault) throw systemError(this.syncFault, 'fdatasync', path);
        this.syncCount += 1;
        file.inode.durableData = Buffer.from(file.inode.data);
        this.syncDir(dirname(path));
        return fd;
      } catch (error) {
        this.fds.delete(fd);
        this.entries.delete(path);
        throw error;
      }
    });
  }

  close(fd: number): void {
    this.file(fd, 'close');
    this.fds.delete(fd);
  }

  closeFile(fd: number): Promise<void> {
    return this.fileOp(() => this.close(fd));
  }

  rename(from: string, to: string): void {
    const inode = this.entries.get(from);
    if (!inode) throw systemError('ENOENT', 'rename', from);
    this.refuseIfReadOnly('rename', from);
    this.entries.delete(from);
    this.entries.set(to, inode);
  }

  link(from: string, to: string): void {
    const inode = this.entries.get(from);
    if (!inode) throw systemError('ENOENT', 'link', from);
    if (this.entries.has(to)) throw systemError('EEXIST', 'link', to);
    this.refuseIfReadOnly('link', to);
    this.entries.set(to, inode);
  }

  remove(path: string): void {
    if (!this.entries.has(path)) return;
    this.refuseIfReadOnly('unlink', path);
    this.entries.delete(path);
  }

  syncDirectory(dir: string): Promise<void> {
    return this.fileOp(() => this.syncDir(dir));
  }

  /** The directory fsync, done at once (tests call it to play a write-back the peer did not ask for). */
  syncDir(dir: string): void {
    if (this.syncFault) throw systemError(this.syncFault, 'fsync', dir);
    for (const path of [...this.durableEntries.keys()]) if (dirname(path) === dir) this.durableEntries.delete(path);
    for (const [path, inode] of this.entries) if (dirname(path) === dir) this.durableEntries.set(path, inode);
  }

  touch(path: string): void {
    const inode = this.entries.get(path);
    if (!inode) throw systemError('ENOENT', 'utimes', path);
    this.refuseIfReadOnly('utimes', path);
    inode.mtimeMs = this.nowMs();
  }

  /** An operation libuv would run on its thread pool: held, or done now and settled a turn later. */
  private fileOp<T>(op: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const run = (): (() => void) => {
        try {
          const value = op();
          return () => resolve(value);
        } catch (error) {
          return () => reject(error);
        }
      };
      if (this.holdFileOps) this.heldFileOps.push(() => run()());
      else setImmediate(run());
    });
  }

  private file(fd: number, op: string): { path: string; inode: Inode } {
    const file = this.fds.get(fd);
    if (!file) throw systemError('EBADF', op, String(fd));
    return file;
  }

  private refuseIfReadOnly(op: string, path: string): void {
    if (this.readOnly) throw systemError('EROFS', op, path);
  }
}
