import * as fs from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The file operations persistence needs, as an interface: production uses the real file
 * system (`nodeDisk`); tests use a simulated disk that can fill up, turn read-only, fail an
 * fsync, or "lose power" (drop everything not fsynced). Appends are synchronous (a write()
 * into the page cache takes microseconds and keeps the order of writes simple). Every fsync is
 * asynchronous, on libuv's thread pool: one can take seconds on a busy disk, and the event loop
 * must go on answering heartbeats and probes meanwhile; concurrent requests share one (group
 * commit). So are the other steps of a segment roll (create, close): opening, rolling and
 * closing the log call no blocking fs function. What stays blocking is quick on any disk that
 * is not failing: appends, reads at start, the lock file, and a snapshot's create, appends
 * (in chunks) and rename.
 */
export interface Disk {
  /** Creates the directory and its parents (no error when it exists). */
  makeDir(dir: string): void;
  /** Names in a directory. */
  list(dir: string): string[];
  readFile(path: string): Buffer;
  /** Size and last modification time, or null when the file does not exist. */
  stat(path: string): { sizeBytes: number; mtimeMs: number } | null;
  /** Creates a new file for writing; fails when it exists. */
  create(path: string): number;
  /** Writes all of `data` at the end of what was written through `fd`. */
  append(fd: number, data: Buffer): void;
  /** Cuts the file back to `sizeBytes` (undoing a partial append). */
  truncate(fd: number, sizeBytes: number): void;
  /** fdatasync, on the thread pool. */
  sync(fd: number): Promise<void>;
  /**
   * Creates a new file holding `firstBytes`, fdatasyncs it, then fsyncs its directory, all on
   * the thread pool: after a power loss the file is there with those bytes, or not at all.
   * Fails when the file exists; a failure removes what it created (best effort).
   */
  createDurably(path: string, firstBytes: Buffer): Promise<number>;
  close(fd: number): void;
  /** close(2) on the thread pool (some file systems write back at close). */
  closeFile(fd: number): Promise<void>;
  /** Atomically replaces `to` with `from`. */
  rename(from: string, to: string): void;
  /** Creates `to` as a second name of `from`; fails when `to` exists (atomic create-with-content). */
  link(from: string, to: string): void;
  /** Removes a file; no error when it is already gone. */
  remove(path: string): void;
  /** fsyncs a directory, on the thread pool, so that files created, renamed or removed in it stay so after a power loss. */
  syncDirectory(dir: string): Promise<void>;
  /** Sets a file's modification time to now (the lock's liveness signal). */
  touch(path: string): void;
}

/** The real file system. */
export const nodeDisk: Disk = {
  makeDir: (dir) => void fs.mkdirSync(dir, { recursive: true }),
  list: (dir) => fs.readdirSync(dir),
  readFile: (path) => fs.readFileSync(path),
  stat(path) {
    try {
      const stats = fs.statSync(path);
      return { sizeBytes: stats.size, mtimeMs: stats.mtimeMs };
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
      throw error;
    }
  },
  create: (path) => fs.openSync(path, 'wx'),
  append(fd, data) {
    let written = 0;
    while (written < data.length) written += fs.writeSync(fd, data, written, data.length - written);
  },
  truncate: (fd, sizeBytes) => fs.ftruncateSync(fd, sizeBytes),
  sync: (fd) => onPool<void>((done) => fs.fdatasync(fd, done)),
  async createDurably(path, firstBytes) {
    const fd = await onPool<number>((done) => fs.open(path, 'wx', done));
    try {
      await writeAll(fd, firstBytes);
      await onPool<void>((done) => fs.fdatasync(fd, done));
      await syncDirectory(dirname(path));
      return fd;
    } catch (error) {
      // A file without its first bytes would read as damage at the next start.
      await onPool<void>((done) => fs.close(fd, done)).catch(() => undefined);
      await onPool<void>((done) => fs.unlink(path, done)).catch(() => undefined);
      throw error;
    }
  },
  close: (fd) => fs.closeSync(fd),
  closeFile: (fd) => onPool<void>((done) => fs.close(fd, done)),
  rename: (from, to) => fs.renameSync(from, to),
  link: (from, to) => fs.linkSync(from, to),
  remove(path) {
    try {
      fs.unlinkSync(path);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
  },
  syncDirectory: (dir) => syncDirectory(dir),
  touch(path) {
    const now = new Date();
    fs.utimesSync(path, now, now);
  },
};

/** Runs one fs callback-style call (on libuv's thread pool) as a promise. */
function onPool<T>(call: (done: (error: NodeJS.ErrnoException | null, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    call((error, value) => (error ? reject(error) : resolve(value as T)));
  });
}

async function writeAll(fd: number, data: Buffer): Promise<void> {
  let written = 0;
  while (written < data.length) {
    written += await onPool<number>((done) => fs.write(fd, data, written, data.length - written, null, done));
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const fd = await onPool<number>((done) => fs.open(dir, 'r', done));
  try {
    await onPool<void>((done) => fs.fsync(fd, done));
  } finally {
    await onPool<void>((done) => fs.close(fd, done));
  }
}

/** `ENOSPC`, `EROFS`, ... of a Node.js system error, or undefined. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

const explanations: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is exhausted',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'an I/O error (the disk may be failing)',
  ENOTDIR: 'a path component is not a directory',
  ENOENT: 'no such file or directory',
  EMFILE: 'too many open files',
};

/** A one-line description of a file system error for logs and answers: "the disk is full (ENOSPC)". */
export function describeDiskError(error: unknown): string {
  const code = errorCode(error);
  const explanation = code ? explanations[code] : undefined;
  if (explanation) return `${explanation} (${code})`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * A data dir the peer cannot start with: not creatable, read-only, full, locked by another
 * running peer, or written in a format this version does not read. The process exits with
 * code 2 and this message, as for a bad configuration.
 */
export class DataDirError extends Error {
  constructor(
    readonly dataDir: string,
    problem: string,
  ) {
    super(`${dataDir}: ${problem}`);
    this.name = 'DataDirError';
  }
}

/** `join`, re-exported so that callers build every path the same way. */
export const pathIn = (dir: string, name: string): string => join(dir, name);
