import { describe, expect, it } from 'vitest';
import { compareVersions } from '../../../src/clock/hlc.js';
import { parseFileName, segmentFileName, snapshotFileName } from '../../../src/persistence/files.js';
import { decodeSegment } from '../../../src/persistence/format.js';
import type { StoreChange } from '../../../src/registry/store.js';
import { DATA_DIR, simulatedDisk, startDurablePeer, type DurablePeer } from '../../support/durable-node.js';
import { FakeClock } from '../../support/fake-clock.js';
import { record } from '../../support/records.js';
import { SimDisk } from '../../support/sim-disk.js';

function filesOf(disk: SimDisk) {
  return disk
    .list(DATA_DIR)
    .map(parseFileName)
    .filter((file) => file !== null)
    .map((file) => `${file.kind}${'seq' in file ? `:${file.seq}` : ''}`)
    .sort();
}

function stateOf(peer: DurablePeer) {
  const out: Record<string, string> = {};
  for (const entry of peer.node.store.entries()) {
    const { record: r } = entry;
    out[r.instanceId] = `${r.data.status}${r.deleted ? `/${r.deleted}` : ''}`;
  }
  return out;
}

describe('restart with a data dir', () => {
  it('restores every write: registers, status changes, cancels and evictions', async () => {
    const { clock, disk } = simulatedDisk();
    const first = await startDurablePeer(disk, clock);
    expect((await first.register('a')).status).toBe(201);
    expect((await first.register('b')).status).toBe(201);
    expect((await first.register('c', { metadata: { zone: 'x' } })).status).toBe(201);
    expect((await first.register('short', { leaseDurationMs: 2_000 })).status).toBe(201);
    await first.app.inject({ method: 'PUT', url: '/v1/services/orders/instances/b/status', payload: { status: 'DOWN' } });
    await first.app.inject({ method: 'DELETE', url: '/v1/services/orders/instances/c' });
    await clock.advance(3_000); // the reaper evicts "short"
    expect(stateOf(first)).toEqual({ a: 'UP', b: 'DOWN', c: 'UP/cancel', short: 'UP/evict' });
    const versionsBefore = [...first.node.store.entries()].map((entry) => entry.record.version);
    await first.node.stop();

    const clock2 = new FakeClock(clock.nowMs() + 60_000);
    const second = await startDurablePeer(disk, clock2, { start: false });
    const seen: StoreChange[] = [];
    second.node.store.onChange((change) => seen.push(change));
    await second.node.start();
    expect(stateOf(second)).toEqual(stateOf(first));
    expect(second.node.store.get({ namespace: 'default', service: 'orders', instanceId: 'c' })?.record.data.metadata).toEqual({ zone: 'x' });
    expect(seen.map((change) => change.origin)).toEqual(['restore', 'restore', 'restore', 'restore']);
    // Nothing restored was logged again: the new segment holds only its header.
    expect(decodeSegment(disk.readFile(`${DATA_DIR}/${segmentFileName(2)}`)).records).toEqual([]);

    const a = second.node.store.get({ namespace: 'default', service: 'orders', instanceId: 'a' })!;
    expect(a.leaseExpiresAtMs).toBe(clock2.nowMs() + 30_000);
    expect(a.heardUntilMs).toBe(0);
    expect(second.logs.find((line) => line.msg === 'data dir loaded')?.fields).toMatchObject({ instances: 2, tombstones: 2, damagedFiles: 0 });

    // The clock went back 60 s against the versions on disk? No matter: new writes are newer.
    const third = new FakeClock(clock.nowMs() - 3_600_000);
    await second.node.stop();
    const later = await startDurablePeer(disk, third);
    const written = await later.register('d');
    for (const version of versionsBefore) expect(compareVersions(written.body.version, version)).toBeGreaterThan(0);
    await later.node.stop();
  });

  it('does not pile up empty segments over restarts without writes', async () => {
    const { clock, disk } = simulatedDisk();
    const first = await startDurablePeer(disk, clock);
    await first.register('a');
    await first.node.stop();
    for (let i = 1; i <= 3; i++) {
      const again = await startDurablePeer(disk, new FakeClock(clock.nowMs() + i * 1_000));
      expect(again.node.store.size).toBe(1);
      await again.node.stop();
    }
    expect(filesOf(disk)).toEqual(['segment:1', 'segment:4']);
  });

  it('keeps an instance whose client heartbeats through the restart and evicts one whose client stopped', async () => {
    const { clock, disk } = simulatedDisk();
    const first = await startDurablePeer(disk, clock);
    await first.register('alive', { leaseDurationMs: 10_000 });
    await first.register('gone', { leaseDurationMs: 10_000 });
    await first.node.stop();

    // Down for longer than the lease: without a grace lease both would be evicted at once.
    const clock2 = new FakeClock(clock.nowMs() + 25_000);
    const second = await startDurablePeer(disk, clock2);
    expect(await second.heartbeat('alive')).toBe(200);
    expect(await second.heartbeat('gone')).toBe(200);
    for (let i = 0; i < 6; i++) {
      await clock2.advance(5_000);
      expect(await second.heartbeat('alive')).toBe(200);
    }
    expect(stateOf(second)).toEqual({ alive: 'UP', gone: 'UP/evict' });
    expect(await second.heartbeat('gone')).toBe(404);
    await second.node.stop();
  });

  it('answers 503 REG_ERR_NOT_READY on every /v1 route until the data dir is loaded', async () => {
    const { clock, disk } = simulatedDisk();
    const peer = await startDurablePeer(disk, clock, { start: false });
    for (const [method, url] of [
      ['PUT', '/v1/services/orders/instances/a/heartbeat'],
      ['GET', '/v1/services/orders'],
      ['POST', '/v1/instances'],
    ] as const) {
      const response = await peer.app.inject({ method, url, payload: method === 'POST' ? { service: 'orders', host: 'h', port: 1 } : undefined });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ code: 'REG_ERR_NOT_READY', message: expect.stringContaining('loading its data dir') });
    }
    expect(peer.node.store.size).toBe(0);
    await peer.node.start();
    expect((await peer.register('a')).status).toBe(201);
    await peer.node.stop();
  });

  it('logs replicated writes too, but never a heartbeat or another lease-only change', async () => {
    const { clock, disk } = simulatedDisk();
    const peer = await startDurablePeer(disk, clock);
    await peer.register('a');
    const mark = peer.node.durability.mark();
    await peer.heartbeat('a');
    await peer.register('a'); // the same data again: a lease renewal
    expect(peer.node.durability.mark()).toBe(mark);
    peer.node.registry.applyRemote(record({ instanceId: 'from-b', peerId: 'peer-b', wallMs: clock.nowMs() }), 30_000);
    expect(peer.node.durability.mark()).toBe(mark + 1);
    await peer.node.stop();
    const ids = decodeSegment(disk.readFile(`${DATA_DIR}/${segmentFileName(1)}`)).records.map((r) => r.instanceId);
    expect(ids).toEqual(['a', 'from-b']);
  });
});

describe('snapshots', () => {
  it('are written when the log grows past snapshotLogBytes; the log behind the previous one goes', async () => {
    const { clock, disk } = simulatedDisk();
    const peer = await startDurablePeer(disk, clock, { storage: { snapshotLogBytes: 65_536 } });
    const metadata = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`key${i}`, 'v'.repeat(40)]));
    for (let i = 0; i < 800; i++) {
      expect((await peer.register(`i-${i}`, { metadata })).status).toBe(201);
    }
    await peer.node.persistence!.snapshotNow('test');
    const written = peer.logs.filter((line) => line.msg === 'snapshot written');
    expect(written.length).toBeGreaterThanOrEqual(3);
    const files = filesOf(disk);
    const snapshots = files.filter((f) => f.startsWith('snapshot:')).map((f) => Number(f.split(':')[1]));
    const segments = files.filter((f) => f.startsWith('segment:')).map((f) => Number(f.split(':')[1]));
    expect(snapshots).toHaveLength(2);
    expect(Math.min(...segments)).toBe(Math.min(...snapshots));
    await peer.register('last');
    await peer.node.stop();

    const again = await startDurablePeer(disk, new FakeClock(clock.nowMs() + 1_000));
    expect(again.node.store.size).toBe(801);
    expect(again.logs.find((line) => line.msg === 'data dir loaded')?.fields).toMatchObject({ instances: 801, damagedFiles: 0 });
    await again.node.stop();
  });

  it('survive a power loss in the middle of one: the next start removes the leftover and loses nothing', async () => {
    const { clock, disk } = simulatedDisk();
    const peer = await startDurablePeer(disk, clock, { storage: { syncPolicy: 'always' } });
    for (let i = 0; i < 5; i++) expect((await peer.register(`i-${i}`)).status).toBe(201);
    disk.holdSyncs = true; // the snapshot's fsync never completes
    void peer.node.persistence!.snapshotNow('test');
    await clock.advance(10);
    expect(disk.list(DATA_DIR)).toContain(`${snapshotFileName(2)}.tmp`);
    disk.syncDir(DATA_DIR); // its directory entry made it to disk, its content did not
    disk.powerLoss();

    const after = await startDurablePeer(disk, new FakeClock(clock.nowMs() + 1_000));
    expect(after.node.store.size).toBe(5);
    expect(disk.list(DATA_DIR).some((name) => name.endsWith('.tmp'))).toBe(false);
    expect(after.logs.filter((line) => line.level === 'warn' && line.msg !== 'data dir lock taken over')).toEqual([]);
    await after.node.stop();
  });

  it('are refused once the data dir is closed, and a close during the start-up snapshot leaves nothing running', async () => {
    const { clock, disk } = simulatedDisk();
    const first = await startDurablePeer(disk, clock);
    await first.register('a');
    await first.node.stop();
    await expect(first.node.persistence!.snapshotNow('late')).rejects.toThrow('the data dir is not open');
    const segment = `${DATA_DIR}/${segmentFileName(1)}`;
    disk.setBytes(segment, disk.readFile(segment).subarray(0, -3)); // damage: the start writes a snapshot

    const clock2 = new FakeClock(clock.nowMs() + 1_000);
    const second = await startDurablePeer(disk, clock2, { start: false });
    disk.holdSyncs = true;
    const starting = second.node.start();
    await clock2.advance(10);
    const stopping = second.node.stop();
    disk.releaseSyncs();
    disk.holdSyncs = false;
    await Promise.all([starting, stopping]);
    expect(second.node.durability.restored).toBe(false);
    const files = disk.list(DATA_DIR).sort();
    expect(files).not.toContain('LOCK');
    const linesAtClose = second.logs.length;
    await clock2.advance(700_000); // past every persistence timer: none may run
    expect(disk.list(DATA_DIR).sort()).toEqual(files);
    expect(second.logs.slice(linesAtClose).filter((line) => line.fields.component === 'persistence')).toEqual([]);
  });

  it('are written every snapshotIntervalMs while there are writes, not when idle', async () => {
    const { clock, disk } = simulatedDisk();
    const peer = await startDurablePeer(disk, clock, { storage: { snapshotIntervalMs: 60_000 } });
    await peer.register('a');
    await clock.advance(60_000);
    await clock.advance(1_000);
    expect(peer.logs.filter((line) => line.msg === 'snapshot written')).toHaveLength(1);
    await clock.advance(300_000);
    expect(peer.logs.filter((line) => line.msg === 'snapshot written')).toHaveLength(1);
    await peer.node.stop();
  });
});

describe('power loss', () => {
  async function writeThenLosePower(syncPolicy: string) {
    const { clock, disk } = simulatedDisk();
    const peer = await startDurablePeer(disk, clock, { storage: { syncPolicy, syncIntervalMs: 200 } });
    const ackedAtMs = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      await clock.advance(30);
      const id = `i-${i}`;
      if ((await peer.register(id)).status === 201) ackedAtMs.set(id, clock.nowMs());
    }
    const lossAtMs = clock.nowMs();
    disk.powerLoss();
    const after = await startDurablePeer(disk, new FakeClock(lossAtMs + 5_000));
    const lost = [...ackedAtMs].filter(([id]) => !after.node.registry.find({ namespace: 'default', service: 'orders', instanceId: id }));
    await after.node.stop();
    return { lost, lossAtMs, acked: ackedAtMs.size };
  }

  it('always: loses no acknowledged write', async () => {
    const { lost, acked } = await writeThenLosePower('always');
    expect(acked).toBe(40);
    expect(lost).toEqual([]);
  });

  it('interval: loses only writes acknowledged within the last syncIntervalMs', async () => {
    const { lost, lossAtMs } = await writeThenLosePower('interval');
    expect(lost.length).toBeGreaterThan(0);
    for (const [, ackedAtMs] of lost) expect(lossAtMs - ackedAtMs).toBeLessThanOrEqual(200);
  });

  it('never: may lose every write since the segment was opened', async () => {
    const { lost, acked } = await writeThenLosePower('never');
    expect(lost).toHaveLength(acked);
  });
});
