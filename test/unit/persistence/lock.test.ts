import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DataDirError } from '../../../src/persistence/disk.js';
import { DataDirLock, decideLock, isPidAlive, LOCK_STALE_MS, processStateOf, type LockHolder, type LockIdentity } from '../../../src/persistence/lock.js';
import { SimDisk } from '../../support/sim-disk.js';

const self: LockIdentity = { pid: 100, hostname: 'h1', processStartedAtMs: 1_000.5 };
const holder = (overrides: Partial<LockHolder> = {}): LockHolder => ({
  pid: 200,
  hostname: 'h1',
  processStartedAtMs: 900.25,
  token: 't',
  acquiredAtMs: 0,
  ...overrides,
});
const fresh = { holderAlive: true, refreshedAgoMs: 1_000 };

describe('decideLock', () => {
  it.each([
    ['no lock file', null, fresh, 'acquire', ''],
    ['an unreadable lock file', 'unreadable' as const, fresh, 'take-over', 'unreadable'],
    ['a live peer on this host', holder(), fresh, 'refuse', 'locked by another running peer (pid 200 on h1'],
    ['a dead pid on this host', holder(), { holderAlive: false, refreshedAgoMs: 1_000 }, 'take-over', 'is not running'],
    ['a live pid that stopped refreshing (reused pid)', holder(), { holderAlive: true, refreshedAgoMs: LOCK_STALE_MS }, 'take-over', 'has not refreshed it for 15 s'],
    ['this very process', holder({ pid: 100, processStartedAtMs: 1_000.5 }), fresh, 'refuse', 'already open in this process'],
    ['an earlier process with our pid (container restart)', holder({ pid: 100 }), fresh, 'take-over', 'earlier process with this pid'],
    ['a fresh lock from another host', holder({ hostname: 'h2' }), { holderAlive: false, refreshedAgoMs: 1_000 }, 'refuse', 'pid 200 on h2'],
    ['a stale lock from another host', holder({ hostname: 'h2' }), { holderAlive: false, refreshedAgoMs: 60_000 }, 'take-over', 'has not refreshed it for 60 s'],
  ])('with %s: %s', (_what, existing, facts, action, why) => {
    const decision = decideLock(existing, self, facts);
    expect(decision.action).toBe(action);
    if (why) expect('why' in decision ? decision.why : '').toContain(why);
  });
});

describe('DataDirLock', () => {
  function setup() {
    let nowMs = 50_000;
    const disk = new SimDisk(() => nowMs);
    disk.makeDir('/d');
    const alive = new Set<number>([100, 200]);
    const lockFor = (identity: LockIdentity) =>
      new DataDirLock({ disk, isPidAlive: (pid) => alive.has(pid), nowMs: () => nowMs }, '/d', identity);
    return { disk, alive, lockFor, advance: (ms: number) => (nowMs += ms) };
  }
  const other: LockIdentity = { pid: 200, hostname: 'h1', processStartedAtMs: 5 };

  it('takes a free dir, refuses a second holder, and frees the dir on release', () => {
    const { disk, lockFor } = setup();
    const first = lockFor(self);
    expect(first.acquire()).toBeNull();
    expect(disk.list('/d')).toEqual(['LOCK']);
    expect(() => lockFor(other).acquire()).toThrow(DataDirError);
    expect(() => lockFor(other).acquire()).toThrow(/locked by another running peer \(pid 100 on h1/);
    expect(disk.list('/d')).toEqual(['LOCK']);
    first.release();
    expect(disk.list('/d')).toEqual([]);
    expect(lockFor(other).acquire()).toBeNull();
  });

  it('takes over the lock of a dead process and says why; the old holder sees it lost', () => {
    const { alive, lockFor } = setup();
    const first = lockFor(self);
    first.acquire();
    alive.delete(100);
    const second = lockFor(other);
    expect(second.acquire()).toContain('its holder (pid 100 on h1) is not running');
    expect(first.refresh()).toMatchObject({ lost: true, problem: expect.stringContaining('pid 200 on h1') });
    expect(second.refresh()).toBeNull();
    first.release();
    expect((second.read() as LockHolder).pid).toBe(200);
  });

  it('keeps a refreshed lock and gives up a lock nobody refreshes', () => {
    const { lockFor, advance } = setup();
    const first = lockFor(self);
    first.acquire();
    advance(LOCK_STALE_MS - 1);
    expect(first.refresh()).toBeNull();
    advance(LOCK_STALE_MS - 1);
    expect(() => lockFor(other).acquire()).toThrow(DataDirError);
    advance(1);
    expect(lockFor(other).acquire()).toContain('has not refreshed it');
  });

  it('names the problem when the lock cannot be written', () => {
    const { disk, lockFor } = setup();
    disk.readOnly = true;
    expect(() => lockFor(self).acquire()).toThrow('/d: cannot write the lock file: the file system is read-only (EROFS)');
  });
});

describe('processStateOf', () => {
  it.each([
    ['1234 (node) S 1 1234 1234 0 -1', 'S'],
    ['1234 (node) Z 1 1234 1234 0 -1', 'Z'],
    ['77 (a (weird) name) R 1 2', 'R'],
    ['77 (sh) X 0', 'X'],
    ['not a stat line', null],
    ['', null],
  ])('%j: %s', (text, state) => {
    expect(processStateOf(text)).toBe(state);
  });
});

/** /proc/PID/stat's state letter, or null when the pid is gone. */
function stateOf(pid: number): string | null {
  try {
    return processStateOf(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * A parent that forks a child which exits at once, prints its pid and sleeps without ever
 * waiting for it: the child stays a zombie until the parent goes. (A shell would not do: it
 * may reap a finished background job before it gets to `exec sleep`.)
 */
const ZOMBIE_PARENT = 'import os, time\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nprint(pid, flush=True)\ntime.sleep(30)\n';

/**
 * Runs `body` with the pid of a real zombie (kill -0 still succeeds on it); its parent is
 * killed by its pid afterwards, and init reaps the zombie.
 */
async function withZombie(body: (zombiePid: number, parentPid: number) => void | Promise<void>): Promise<void> {
  const parent = spawn('python3', ['-c', ZOMBIE_PARENT], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const zombiePid = await new Promise<number>((resolve, reject) => {
      parent.stdout.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim())));
      parent.once('error', reject);
    });
    for (let i = 0; i < 500 && stateOf(zombiePid) !== 'Z'; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(stateOf(zombiePid)).toBe('Z');
    await body(zombiePid, parent.pid!);
  } finally {
    parent.kill('SIGKILL');
  }
}

describe.skipIf(process.platform !== 'linux')('isPidAlive', () => {
  it('says no for a zombie: a child that exited and that its parent has not reaped', async () => {
    await withZombie((zombiePid, parentPid) => {
      expect(() => process.kill(zombiePid, 0)).not.toThrow();
      expect(isPidAlive(zombiePid)).toBe(false);
      expect(isPidAlive(parentPid)).toBe(true);
      expect(isPidAlive(process.pid)).toBe(true);
    });
  });

  it('a data dir whose holder is a zombie is taken over at once', async () => {
    await withZombie((zombiePid) => {
      const disk = new SimDisk(() => 1_000);
      disk.makeDir('/d');
      const zombieHolder = { pid: zombiePid, hostname: 'h1', processStartedAtMs: 1 };
      new DataDirLock({ disk, isPidAlive: () => true, nowMs: () => 1_000 }, '/d', zombieHolder).acquire();
      // Refreshed a moment ago, same host: only the process state tells it is gone.
      const lock = new DataDirLock({ disk, isPidAlive, nowMs: () => 1_500 }, '/d', self);
      expect(lock.acquire()).toContain(`its holder (pid ${zombiePid} on h1) is not running`);
    });
  });
});
