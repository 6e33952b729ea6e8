import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { DataDirError, describeDiskError, errorCode, pathIn, type Disk } from './disk.js';
import { LOCK_FILE } from './files.js';

/** Who holds a data dir: written in its LOCK file as JSON. */
export interface LockHolder {
  pid: number;
  hostname: string;
  /** When the holding process started (`performance.timeOrigin`): tells a reused pid from the same process. */
  processStartedAtMs: number;
  /** Unique per lock taken, so that a holder recognises its own lock. */
  token: string;
  acquiredAtMs: number;
}

export type LockIdentity = Pick<LockHolder, 'pid' | 'hostname' | 'processStartedAtMs'>;

export interface LockFacts {
  /** Whether the holder's pid is a running process on this host. */
  holderAlive: boolean;
  /** How long ago the holder last touched the lock file. */
  refreshedAgoMs: number;
}

/** `holderRunning`: refused because a live peer holds it, which may yet let go (worth waiting for). */
export type LockDecision =
  | { action: 'acquire' }
  | { action: 'take-over'; why: string }
  | { action: 'refuse'; why: string; holderRunning?: boolean };

/** How often the holder touches its lock file, so that others can tell it is alive. */
export const LOCK_REFRESH_MS = 2_000;
/** A lock not touched for this long belongs to no running peer, whatever its pid says now. */
export const LOCK_STALE_MS = 15_000;
/** While waiting for a live holder to let go, how often the lock is tried again. */
export const LOCK_RETRY_MS = 250;

/**
 * Whether a peer may take a data dir whose LOCK file says `existing` (null: no lock file).
 * Pure. The pid decides on the same host; the lock's refresh time decides across hosts (a
 * volume moved to a new container) and catches a pid reused by an unrelated process.
 */
export function decideLock(existing: LockHolder | 'unreadable' | null, self: LockIdentity, facts: LockFacts): LockDecision {
  if (existing === null) return { action: 'acquire' };
  if (existing === 'unreadable') return { action: 'take-over', why: 'the lock file is unreadable' };
  const holder = `pid ${existing.pid} on ${existing.hostname}`;
  const sameHost = existing.hostname === self.hostname;
  if (sameHost && existing.pid === self.pid) {
    if (existing.processStartedAtMs === self.processStartedAtMs) {
      return { action: 'refuse', why: 'it is already open in this process' };
    }
    return { action: 'take-over', why: `its holder (${holder}) was an earlier process with this pid` };
  }
  const refreshedS = Math.round(facts.refreshedAgoMs / 1000);
  if (facts.refreshedAgoMs >= LOCK_STALE_MS) {
    return { action: 'take-over', why: `its holder (${holder}) has not refreshed it for ${refreshedS} s` };
  }
  if (sameHost && !facts.holderAlive) return { action: 'take-over', why: `its holder (${holder}) is not running` };
  return {
    action: 'refuse',
    why: `it is locked by another running peer (${holder}, refreshed ${refreshedS} s ago); stop that peer or use another data dir`,
    holderRunning: true,
  };
}

/**
 * The state letter of a process from the text of its /proc/PID/stat (`R`, `S`, `D`, `Z`,
 * `X`...), or null when the text is not one. The command name in parentheses may itself hold
 * spaces and parentheses, so the state is the field after the last `)`.
 */
export function processStateOf(statText: string): string | null {
  const end = statText.lastIndexOf(')');
  if (end < 0) return null;
  const state = /^ (\S)/.exec(statText.slice(end + 1));
  return state ? state[1]! : null;
}

/** Zombie (exited, not yet reaped by its parent) and dead: a pid that no longer runs anything. */
const EXITED_STATES = new Set(['Z', 'X', 'x']);

/**
 * Whether a pid is a running process on this host. `kill -0` alone says yes for a zombie: a
 * peer killed with SIGKILL stays one until its parent (a shell, a supervisor, init) reaps it,
 * and a restart at once would find its lock "held". So on Linux the state in /proc/PID/stat
 * decides too; where there is no /proc, `kill -0` is all there is.
 */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    // Reaped in between: gone. No /proc (not Linux) or no access: trust kill -0.
    return errorCode(error) !== 'ENOENT' || !procMounted();
  }
  const state = processStateOf(stat);
  return state === null || !EXITED_STATES.has(state);
}

function procMounted(): boolean {
  try {
    readFileSync('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
}

export interface DataDirLockComponents {
  disk: Disk;
  isPidAlive: (pid: number) => boolean;
  nowMs: () => number;
}

/** The identity of this process. */
export function processIdentity(): LockIdentity {
  return { pid: process.pid, hostname: hostname(), processStartedAtMs: performance.timeOrigin };
}

/**
 * The LOCK file of a data dir. Taken with link(2), so the file appears with its content in
 * one step and two peers starting together cannot both create it; a stale lock is replaced
 * with rename(2). The holder touches it every LOCK_REFRESH_MS and checks it is still its own.
 */
export class DataDirLock {
  private readonly path: string;
  private holder: LockHolder | null = null;

  constructor(
    private readonly components: DataDirLockComponents,
    private readonly dir: string,
    private readonly self: LockIdentity,
  ) {
    this.path = pathIn(dir, LOCK_FILE);
  }

  /** Takes the lock; returns why a stale one was taken over (null for a free dir). Throws DataDirError. */
  acquire(): string | null {
    const attempt = this.attempt();
    if (!attempt.ok) throw new DataDirError(this.dir, attempt.why);
    return attempt.takenOver;
  }

  /**
   * Takes the lock, waiting up to `waitMs` for a live holder to let go (a peer still shutting
   * down while its successor starts); `sleep` is the clock's. `onWait` is told once, when the
   * wait begins. Any other refusal, or a holder still there at the end, throws DataDirError.
   */
  async acquireWithin(waitMs: number, sleep: (ms: number) => Promise<void>, onWait: (why: string) => void): Promise<string | null> {
    const deadlineMs = this.components.nowMs() + waitMs;
    for (let waited = false; ; waited = true) {
      const attempt = this.attempt();
      if (attempt.ok) return attempt.takenOver;
      const leftMs = deadlineMs - this.components.nowMs();
      if (!attempt.holderRunning || leftMs <= 0) {
        throw new DataDirError(this.dir, waited ? `${attempt.why} (waited ${waitMs} ms for it to exit)` : attempt.why);
      }
      if (!waited) onWait(attempt.why);
      await sleep(Math.min(LOCK_RETRY_MS, leftMs));
    }
  }

  private attempt(): { ok: true; takenOver: string | null } | { ok: false; why: string; holderRunning: boolean } {
    const { disk } = this.components;
    const holder: LockHolder = { ...this.self, token: randomUUID(), acquiredAtMs: this.components.nowMs() };
    const temp = pathIn(this.dir, `${LOCK_FILE}.${holder.token}.tmp`);
    const fail = (why: string, holderRunning = false) => {
      disk.remove(temp);
      return { ok: false as const, why, holderRunning };
    };
    try {
      const fd = disk.create(temp);
      try {
        disk.append(fd, Buffer.from(JSON.stringify(holder)));
      } finally {
        disk.close(fd);
      }
    } catch (error) {
      return fail(`cannot write the lock file: ${describeDiskError(error)}`);
    }
    let takenOver: string | null = null;
    try {
      disk.link(temp, this.path);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') return fail(`cannot create the lock file: ${describeDiskError(error)}`);
      const existing = this.read();
      const decision = decideLock(existing, this.self, {
        holderAlive: existing !== null && existing !== 'unreadable' && this.components.isPidAlive(existing.pid),
        refreshedAgoMs: Math.max(0, this.components.nowMs() - (disk.stat(this.path)?.mtimeMs ?? 0)),
      });
      if (decision.action === 'refuse') return fail(decision.why, decision.holderRunning === true);
      takenOver = decision.action === 'take-over' ? decision.why : null;
      try {
        disk.rename(temp, this.path);
      } catch (renameError) {
        return fail(`cannot replace the stale lock file: ${describeDiskError(renameError)}`);
      }
    }
    disk.remove(temp);
    const now = this.read();
    if (now === null || now === 'unreadable' || now.token !== holder.token) {
      return { ok: false as const, why: 'another peer took the lock at the same moment; start only one peer per data dir', holderRunning: false };
    }
    this.holder = holder;
    return { ok: true as const, takenOver };
  }

  /**
   * Touches the lock so others see it is alive, and checks it is still ours. Returns null when
   * all is well, or what went wrong (the lock was taken by someone else, or cannot be touched).
   */
  refresh(): { lost: boolean; problem: string } | null {
    if (!this.holder) return null;
    const current = this.read();
    if (current === null || current === 'unreadable' || current.token !== this.holder.token) {
      const who = current && current !== 'unreadable' ? `pid ${current.pid} on ${current.hostname}` : 'nobody';
      return { lost: true, problem: `the lock file was replaced or removed (it now names ${who})` };
    }
    try {
      this.components.disk.touch(this.path);
      return null;
    } catch (error) {
      return { lost: false, problem: `cannot refresh the lock file: ${describeDiskError(error)}` };
    }
  }

  /** Removes the lock file if it is still ours. */
  release(): void {
    if (!this.holder) return;
    const current = this.read();
    if (current !== null && current !== 'unreadable' && current.token === this.holder.token) this.components.disk.remove(this.path);
    this.holder = null;
  }

  /** The holder named in the lock file, null when there is none. */
  read(): LockHolder | 'unreadable' | null {
    let text: string;
    try {
      text = this.components.disk.readFile(this.path).toString('utf8');
    } catch (error) {
      return errorCode(error) === 'ENOENT' ? null : 'unreadable';
    }
    return parseLockHolder(text);
  }
}

/** The holder in a lock file's text, or 'unreadable'. */
export function parseLockHolder(text: string): LockHolder | 'unreadable' {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid === 'number' && typeof value.hostname === 'string' && typeof value.token === 'string') {
      return value as LockHolder;
    }
  } catch {
    // fall through
  }
  return 'unreadable';
}
