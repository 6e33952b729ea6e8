import { describe, expect, it } from 'vitest';
import type { SyncPolicy } from '../../../src/config/settings.js';
import { segmentFileName } from '../../../src/persistence/files.js';
import { decodeSegment } from '../../../src/persistence/format.js';
import { SegmentLog } from '../../../src/persistence/segment-log.js';
import { settle } from '../../support/fake-clock.js';
import { record } from '../../support/records.js';
import { SimDisk } from '../../support/sim-disk.js';

function setup(syncPolicy: SyncPolicy) {
  const disk = new SimDisk();
  disk.makeDir('/d');
  const failures: [unknown, string][] = [];
  const log = new SegmentLog(disk, { dir: '/d', peerId: 'p', syncPolicy, nowMs: () => 0, onFailure: (e, during) => failures.push([e, during]) });
  log.open(1);
  const syncsAtOpen = disk.syncCount;
  const path = `/d/${segmentFileName(1)}`;
  /** One "request": appends a record and returns its barrier with a settled flag. */
  const write = (id: string) => {
    const mark = log.mark();
    log.append(record({ instanceId: id }));
    const state = { settled: false, error: undefined as unknown };
    const done = log.barrier(mark).then(
      () => void (state.settled = true),
      (error: unknown) => {
        state.settled = true;
        state.error = error;
      },
    );
    return { state, done };
  };
  const ids = () => decodeSegment(disk.readFile(path)).records.map((r) => r.instanceId);
  return { disk, log, failures, path, write, ids, syncs: () => disk.syncCount - syncsAtOpen };
}

describe('SegmentLog with always', () => {
  it('answers only after an fsync; the writes of one event-loop turn share one write() and one fsync', async () => {
    const { disk, write, syncs, ids } = setup('always');
    disk.holdSyncs = true;
    const appendsBefore = disk.appendCount;
    const writes = ['a', 'b', 'c', 'd', 'e'].map(write);
    await settle();
    expect(ids()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(disk.appendCount - appendsBefore).toBe(1);
    expect(writes.every((w) => !w.state.settled)).toBe(true);
    expect(disk.pendingSyncs).toBe(1);
    disk.releaseSyncs();
    await Promise.all(writes.map((w) => w.done));
    expect(syncs()).toBe(1);
  });

  it('makes a write that arrives during an fsync wait for the next one', async () => {
    const { disk, write } = setup('always');
    disk.holdSyncs = true;
    const first = write('a');
    await settle();
    const second = write('b');
    disk.releaseSyncs();
    await first.done;
    await settle();
    expect(second.state.settled).toBe(false);
    expect(disk.pendingSyncs).toBe(1);
    disk.releaseSyncs();
    await second.done;
    expect(second.state.error).toBeUndefined();
  });

  it('loses no acknowledged write to a power loss', async () => {
    const { disk, write, ids } = setup('always');
    for (const id of ['a', 'b', 'c']) await write(id).done;
    write('unacknowledged');
    disk.powerLoss();
    expect(ids()).toEqual(['a', 'b', 'c']);
  });

  it('answers a failed fsync with the error, not a success', async () => {
    const { disk, write, failures, log } = setup('always');
    disk.syncFault = 'EIO';
    const w = write('a');
    await w.done;
    expect((w.state.error as NodeJS.ErrnoException).code).toBe('EIO');
    expect(failures.map(([, during]) => during)).toEqual(['sync']);
    expect(log.failed).toBe(true);
  });
});

describe('SegmentLog with interval and never', () => {
  it.each(['interval', 'never'] as const)('%s: answers once the record is in the file, without an fsync', async (policy) => {
    const { disk, write, syncs, ids } = setup(policy);
    const w = write('a');
    expect(ids()).toEqual([]); // queued for this turn's write()
    const v = write('b');
    await Promise.all([w.done, v.done]);
    expect(ids()).toEqual(['a', 'b']);
    expect(disk.appendCount).toBe(2); // the header, then both records at once
    expect(syncs()).toBe(0);
  });

  it('interval: a power loss takes only what was written since the last fsync', async () => {
    const { disk, log, write, ids } = setup('interval');
    await write('a').done;
    await write('b').done;
    await log.syncWritten();
    await write('c').done;
    expect(ids()).toEqual(['a', 'b', 'c']);
    disk.powerLoss();
    expect(ids()).toEqual(['a', 'b']);
  });

  it('a crash of the process alone loses nothing written', async () => {
    const { disk, write, ids } = setup('never');
    await write('a').done;
    disk.processCrash();
    expect(ids()).toEqual(['a']);
  });
});

describe('SegmentLog on a disk error', () => {
  it('cuts a torn append back, refuses until reopened, then writes to a new segment', async () => {
    const { disk, log, write, failures, path, ids } = setup('interval');
    await write('a').done;
    const sizeBefore = disk.readFile(path).length;
    disk.capacityBytes = disk.usedBytes() + 20; // the next frame only partly fits
    const failed = write('b');
    await failed.done;
    expect((failed.state.error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(disk.readFile(path).length).toBe(sizeBefore);
    expect(decodeSegment(disk.readFile(path)).damage).toBeNull();
    expect(ids()).toEqual(['a']);
    const refused = write('c');
    await refused.done;
    expect(refused.state.error).toBeDefined();
    expect(failures).toHaveLength(1);

    disk.capacityBytes = Number.POSITIVE_INFINITY;
    await log.reopen(2);
    expect(log.failed).toBe(false);
    await write('d').done;
    expect(decodeSegment(disk.readFile(`/d/${segmentFileName(2)}`)).records.map((r) => r.instanceId)).toEqual(['d']);
  });

  it('leaves no half-written segment behind when it cannot open one', async () => {
    const { disk, log } = setup('interval');
    disk.capacityBytes = disk.usedBytes() + 10;
    await expect(log.roll(2)).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(disk.list('/d')).toEqual([segmentFileName(1)]);
  });

  it('rolls to a new segment with everything before it fsynced', async () => {
    const { disk, log, write, ids } = setup('never');
    await write('a').done;
    await log.roll(2);
    await write('b').done;
    disk.powerLoss();
    expect(ids()).toEqual(['a']);
    expect(log.segmentSeq).toBe(2);
  });
});
