import { describe, expect, it } from 'vitest';
import { DataDirError } from '../../../src/persistence/disk.js';
import { segmentFileName, snapshotFileName } from '../../../src/persistence/files.js';
import { encodeFrame } from '../../../src/persistence/frame.js';
import { FORMAT_VERSION, MAGIC } from '../../../src/persistence/format.js';
import { LOCK_REFRESH_MS } from '../../../src/persistence/lock.js';
import { DATA_DIR, simulatedDisk, startDurablePeer } from '../../support/durable-node.js';
import { FakeClock } from '../../support/fake-clock.js';
import { SimDisk } from '../../support/sim-disk.js';

const key = (instanceId: string) => ({ namespace: 'default', service: 'orders', instanceId });

describe('a disk that fails at run time', () => {
  it.each([
    ['full', 'interval', (disk: SimDisk) => void (disk.capacityBytes = disk.usedBytes() + 10), (disk: SimDisk) => void (disk.capacityBytes = Infinity), 'the disk is full (ENOSPC)'],
    ['read-only', 'interval', (disk: SimDisk) => void (disk.readOnly = true), (disk: SimDisk) => void (disk.readOnly = false), 'the file system is read-only (EROFS)'],
    ['failing fsyncs', 'always', (disk: SimDisk) => void (disk.syncFault = 'EIO'), (disk: SimDisk) => void (disk.syncFault = null), 'an I/O error (the disk may be failing) (EIO)'],
  ])('%s (%s): writes answer REG_ERR_STORAGE, reads go on, and the peer recovers by itself', async (_what, syncPolicy, breakDisk, repairDisk, reason) => {
    const { clock, disk } = simulatedDisk();
    const peer = await startDurablePeer(disk, clock, { storage: { syncPolicy, retryIntervalMs: 2_000 } });
    expect((await peer.register('a')).status).toBe(201);
    expect((await peer.register('dies', { leaseDurationMs: 1_000 })).status).toBe(201);

    breakDisk(disk);
    const failed = await peer.register('b');
    expect(failed.status).toBe(503);
    expect(failed.body).toEqual({
      code: 'REG_ERR_STORAGE',
      message: `the data dir cannot take writes: ${reason}; writes are refused until it can, reads still work`,
    });
    expect(peer.logs.filter((line) => line.level === 'error').map((line) => line.msg)).toEqual([
      'storage failed: writes are refused until the data dir works again',
    ]);

    // Refused up front now: the store does not change.
    const revision = peer.node.store.revision;
    expect((await peer.register('c')).status).toBe(503);
    expect((await peer.app.inject({ method: 'DELETE', url: '/v1/services/orders/instances/a' })).statusCode).toBe(503);
    expect(peer.node.store.revision).toBe(revision);
    expect(peer.node.registry.find(key('c'))).toBeUndefined();
    // Reads and heartbeats still work.
    expect((await peer.app.inject({ url: '/v1/services/orders/instances/a' })).statusCode).toBe(200);
    expect(await peer.heartbeat('a')).toBe(200);
    // The reaper goes on too: this eviction cannot be logged now, the recovery snapshot will hold it.
    await clock.advance(1_500);
    expect(peer.node.store.get(key('dies'))?.record.deleted).toBe('evict');
    expect(peer.logs.some((line) => line.msg === 'storage still failing')).toBe(false);
    await clock.advance(1_000); // the first retry, 2 s after the failure, fails
    expect(peer.logs.some((line) => line.msg === 'storage still failing')).toBe(true);
    expect((await peer.register('c')).status).toBe(503);

    repairDisk(disk);
    await clock.advance(2_000);
    expect(peer.logs.some((line) => line.msg === 'storage recovered: writes are accepted again')).toBe(true);
    expect((await peer.register('c')).status).toBe(201);
    await peer.node.stop();

    const after = await startDurablePeer(disk, new FakeClock(clock.nowMs() + 1_000));
    expect(after.node.registry.find(key('a'))).toBeDefined();
    expect(after.node.registry.find(key('c'))).toBeDefined();
    expect(after.node.store.get(key('dies'))?.record.deleted).toBe('evict');
    // The failed retries left nothing behind that reads as damage.
    expect(after.logs.filter((line) => line.level !== 'info' && line.level !== 'debug')).toEqual([]);
    await after.node.stop();
  });

  it('refuses writes for good once another process took the lock, and says so', async () => {
    const { clock, disk } = simulatedDisk();
    const peer = await startDurablePeer(disk, clock);
    expect((await peer.register('a')).status).toBe(201);
    disk.setBytes(`${DATA_DIR}/LOCK`, Buffer.from(JSON.stringify({ pid: 1, hostname: 'other', token: 'theirs', processStartedAtMs: 0 })));
    await clock.advance(LOCK_REFRESH_MS);
    expect(peer.logs.some((line) => line.msg === 'data dir lock lost: writes are refused until restart')).toBe(true);
    const refused = await peer.register('b');
    expect(refused.status).toBe(503);
    expect(refused.body.message).toContain('the data dir lock was lost');
    await clock.advance(60_000);
    expect((await peer.register('b')).status).toBe(503);
    await peer.node.stop();
    expect(JSON.parse(disk.readFile(`${DATA_DIR}/LOCK`).toString()).token).toBe('theirs');
  });
});

describe('a data dir the peer cannot start with', () => {
  const header = (format: number) =>
    Buffer.concat([MAGIC.segment, encodeFrame(Buffer.from(JSON.stringify({ type: 'segment', format, seq: 1, peerId: 'x', createdAtMs: 0 })))]);

  it.each([
    ['a file where the dir should be', (disk: SimDisk) => {
      disk.makeDir('/');
      disk.create('/data');
    }, 'cannot create the data dir: a path component is not a directory (ENOTDIR)'],
    ['a read-only file system', (disk: SimDisk) => {
      disk.makeDir(DATA_DIR);
      disk.readOnly = true;
    }, 'cannot write the lock file: the file system is read-only (EROFS)'],
    ['a full disk', (disk: SimDisk) => {
      disk.makeDir(DATA_DIR);
      disk.capacityBytes = 0;
    }, 'cannot write the lock file: the disk is full (ENOSPC)'],
    ['a newer format', (disk: SimDisk) => {
      disk.makeDir(DATA_DIR);
      const fd = disk.create(`${DATA_DIR}/${segmentFileName(1)}`);
      disk.append(fd, header(FORMAT_VERSION + 1));
    }, `${segmentFileName(1)} has format ${FORMAT_VERSION + 1}, this peer reads format ${FORMAT_VERSION}: it was written by a newer version`],
  ])('%s: start fails with a DataDirError naming it', async (_what, prepare, message) => {
    const { clock, disk } = simulatedDisk();
    prepare(disk);
    const peer = await startDurablePeer(disk, clock, { start: false });
    const error = await peer.node.start().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DataDirError);
    expect((error as Error).message).toBe(`${DATA_DIR}: ${message}`);
  });

  it('a file that cannot be read at all: start fails naming it, rather than taking it for damage', async () => {
    const { clock, disk } = simulatedDisk();
    const first = await startDurablePeer(disk, clock);
    await first.register('a');
    await first.node.persistence!.snapshotNow('test');
    await first.node.stop();
    disk.unreadable.add(`${DATA_DIR}/${snapshotFileName(2)}`);
    const second = await startDurablePeer(disk, new FakeClock(clock.nowMs() + 1_000), { start: false });
    await expect(second.node.start()).rejects.toThrow(
      `${DATA_DIR}: cannot read the data dir: cannot read ${snapshotFileName(2)}: an I/O error (the disk may be failing) (EIO)`,
    );
    expect(disk.list(DATA_DIR)).toContain(snapshotFileName(2));
    expect(disk.list(DATA_DIR)).toContain(segmentFileName(1));
  });

  it('a dir locked by another running peer: start fails and the lock stays theirs', async () => {
    const { clock, disk } = simulatedDisk();
    disk.makeDir(DATA_DIR);
    const lock = { pid: process.pid, hostname: 'test-host', token: 'theirs', processStartedAtMs: -1, acquiredAtMs: 0 };
    const fd = disk.create(`${DATA_DIR}/LOCK`);
    disk.append(fd, Buffer.from(JSON.stringify(lock)));
    const peer = await startDurablePeer(disk, clock, { start: false });
    // The peer waits storage.lockWaitMs for the holder to let go: let virtual time run.
    const outcome = peer.node.start().then(() => 'started', (error: Error) => error);
    let settled = false;
    void outcome.then(() => (settled = true));
    const waitedMs = await clock.advanceUntil(() => settled, 60_000, 100);
    expect(waitedMs).toBeGreaterThanOrEqual(peer.node.config.storage.lockWaitMs);
    expect(await outcome).toBeInstanceOf(Error);
    expect(String(await outcome)).toContain(`it is locked by another running peer (pid ${process.pid} on test-host`);
    expect(String(await outcome)).toContain(`(waited ${peer.node.config.storage.lockWaitMs} ms for it to exit)`);
    expect(peer.logs.some((line) => line.msg === 'data dir locked: waiting for its holder to exit')).toBe(true);
    expect(JSON.parse(disk.readFile(`${DATA_DIR}/LOCK`).toString()).token).toBe('theirs');
  });

  it('a dir whose holder exits during the wait: start takes it', async () => {
    const { clock, disk } = simulatedDisk();
    disk.makeDir(DATA_DIR);
    const lock = { pid: process.pid, hostname: 'test-host', token: 'theirs', processStartedAtMs: -1, acquiredAtMs: 0 };
    const fd = disk.create(`${DATA_DIR}/LOCK`);
    disk.append(fd, Buffer.from(JSON.stringify(lock)));
    const peer = await startDurablePeer(disk, clock, { start: false, storage: { lockWaitMs: 10_000 } });
    let started = false;
    const starting = peer.node.start().then(() => (started = true));
    await clock.advance(2_000);
    expect(started).toBe(false);
    disk.remove(`${DATA_DIR}/LOCK`); // the holder shut down and released it
    await clock.advanceUntil(() => started, 5_000, 50);
    await starting;
    expect(JSON.parse(disk.readFile(`${DATA_DIR}/LOCK`).toString()).pid).toBe(peer.node.components.processIdentity?.pid);
    await peer.node.stop();
  });

  it('storage.lockWaitMs 0 refuses a held dir at once', async () => {
    const { clock, disk } = simulatedDisk();
    disk.makeDir(DATA_DIR);
    const fd = disk.create(`${DATA_DIR}/LOCK`);
    disk.append(fd, Buffer.from(JSON.stringify({ pid: process.pid, hostname: 'test-host', token: 'theirs', processStartedAtMs: -1, acquiredAtMs: 0 })));
    const peer = await startDurablePeer(disk, clock, { start: false, storage: { lockWaitMs: 0 } });
    await expect(peer.node.start()).rejects.toThrow(/locked by another running peer \(pid \d+ on test-host, refreshed 0 s ago\); stop that peer or use another data dir$/);
  });
});

describe('damage found at start', () => {
  it('cuts a damaged segment, says where, covers it with a snapshot and sets it aside', async () => {
    const { clock, disk } = simulatedDisk();
    const first = await startDurablePeer(disk, clock);
    for (const id of ['a', 'b', 'c']) await first.register(id);
    await first.node.stop();
    const path = `${DATA_DIR}/${segmentFileName(1)}`;
    const bytes = disk.readFile(path);
    const cutAt = bytes.length - 40; // inside the last record
    const frameStart = bytes.lastIndexOf(Buffer.from('{"type":"put"')) - 8;
    disk.setBytes(path, bytes.subarray(0, cutAt));

    const second = await startDurablePeer(disk, new FakeClock(clock.nowMs() + 1_000));
    expect([...second.node.store.entries()].map((entry) => entry.record.instanceId).sort()).toEqual(['a', 'b']);
    const warning = second.logs.find((line) => line.msg === 'log segment damaged: cut at offset');
    expect(warning?.fields).toMatchObject({ file: segmentFileName(1), offset: frameStart, reason: 'truncated frame', droppedBytes: cutAt - frameStart, recordsKept: 2 });
    expect(second.logs.some((line) => line.msg === 'snapshot written' && line.fields.reason === 'damage found at start')).toBe(true);
    expect(disk.list(DATA_DIR)).toContain(`${segmentFileName(1)}.damaged`);
    expect(second.node.ready).toBe(true);
    await second.node.stop();

    const third = await startDurablePeer(disk, new FakeClock(clock.nowMs() + 2_000));
    expect(third.logs.filter((line) => line.level === 'warn')).toEqual([]);
    expect(third.node.store.size).toBe(2);
    await third.node.stop();
  });

  it('falls back from a damaged snapshot to the previous one and loses nothing', async () => {
    const { clock, disk } = simulatedDisk();
    const first = await startDurablePeer(disk, clock);
    await first.register('a');
    await first.node.persistence!.snapshotNow('test');
    await first.register('b');
    await first.node.persistence!.snapshotNow('test');
    await first.register('c');
    await first.node.stop();
    const newest = `${DATA_DIR}/${snapshotFileName(3)}`;
    const bytes = Buffer.from(disk.readFile(newest));
    bytes[bytes.length - 20] = bytes[bytes.length - 20]! ^ 0xff;
    disk.setBytes(newest, bytes);

    const second = await startDurablePeer(disk, new FakeClock(clock.nowMs() + 1_000));
    expect(second.node.store.size).toBe(3);
    expect(second.logs.find((line) => line.msg === 'snapshot damaged: falling back to the previous one')?.fields).toMatchObject({
      file: snapshotFileName(3),
      fallback: snapshotFileName(2),
      reason: 'checksum mismatch',
    });
    await second.node.stop();
  });
});
