import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { coreLayout, listingCacheBytesOf, nodeFlagsOf, type ScaleResult } from '../../../bench/scale.js';
import { seenBackAfter, seenBackBy } from '../../../bench/lib.js';
import { PEER_NODE_FLAGS } from '../../../src/node-flags.js';
import { renderScaleMarkdown } from '../../../bench/scale-report.js';

describe('scale benchmark: core layout', () => {
  it('gives each of five peers two cores of sixteen and the load the six left', () => {
    expect(coreLayout(16, 5)).toEqual({ peerCores: ['0-1', '2-3', '4-5', '6-7', '8-9'], loaderCores: '10-15' });
  });
  it('gives each peer one core when two would leave too few for the load, and shares all cores when even one would not fit', () => {
    expect(coreLayout(8, 5)).toEqual({ peerCores: ['0', '1', '2', '3', '4'], loaderCores: '5-7' });
    expect(coreLayout(6, 5)).toEqual({ peerCores: ['0', '1', '2', '3', '4'], loaderCores: '5' });
    expect(coreLayout(2, 5)).toEqual({ peerCores: ['0-1', '0-1', '0-1', '0-1', '0-1'], loaderCores: '0-1' });
  });
});

describe('scale benchmark: markdown', () => {
  it('shows each phase measured, and why one was skipped', () => {
    const result: ScaleResult = {
      options: { instances: 1_000_000, cores: 16, services: 1_000, peers: 5, heartbeatSeconds: 30, budgetMs: 400_000, idleSeconds: 20, nodeFlags: ['--max-semi-space-size=4'] },
      machine: { cpus: 16, model: 'test cpu', node: 'v20.0.0' },
      layout: { peerCores: ['0-1'], loaderCores: '10-15', loaders: 6 },
      startedAt: '2026-12-04T00:00:00.000Z',
      durationSeconds: 300,
      onePeer: { idleRssMb: 100, points: [{ instances: 100_000, rssMb: 150, heapUsedMb: 90.5 }], slopeBytesPerInstance: 480, heapSlopeBytesPerInstance: 410, aboveIdleBytesPerInstance: 520, rSquared: 0.999, settledRssMb: 140, settledAboveIdleBytesPerInstance: 42, registerPerSecond: 20_000, coldRegisterPerSecond: 9_000, errors: 0 },
      join: { readyMs: 9_000, allListedMs: 9_500, newPeerRssMb: 600, servingPeerCpuSeconds: 7.5 },
      cluster: { skipped: 'needs about 260 s, 100 s left' },
    };
    const page = renderScaleMarkdown(result);
    expect(page).toContain('| one peer: bytes per instance (slope of RSS, least squares) | 480 B (R² 0.999); above idle at 1,000,000: 520 B; heap in use 410 B |');
    expect(page).toContain('| one peer: RSS by instances (heap in use) | 100,000: 150 MB (90.5 MB) |');
    expect(page).toContain('peer Node flags: --max-semi-space-size=4;');
    expect(page).toContain('| one peer: RSS at the end after 20 s idle | 140 MB: 42 B per instance above idle |');
    expect(page).toContain('| a new peer joins: ready / lists every instance | 9,000 ms / 9,500 ms |');
    expect(page).toContain('| peers with heartbeats | skipped: needs about 260 s, 100 s left |');
  });
});

describe('scale benchmark: markdown of the heartbeating peers', () => {
  const twoPeers = {
    peers: 2,
    registerSeconds: 30,
    allListedMs: 600,
    heartbeatsPerSecond: 3_300,
    heartbeatSeconds: 60,
    p50Ms: 1,
    p99Ms: 9,
    maxMs: 20,
    errors: 0,
    skippedBeats: 0,
    rssMb: [170.5, 171],
    idleRssMb: [99, 100],
    points: [
      { instances: 10_000, rssMb: [120, 121] },
      { instances: 100_000, rssMb: [170.5, 171] },
    ],
    slopeBytesPerInstance: [530, 525],
  };
  const resultOf = (cluster: ScaleResult['cluster'], listingCacheBytes?: number): ScaleResult => ({
    options: { instances: 100_000, cores: 2, services: 1_000, peers: 2, heartbeatSeconds: 30, budgetMs: 400_000, idleSeconds: 20, nodeFlags: [], ...(listingCacheBytes === undefined ? {} : { listingCacheBytes }) },
    machine: { cpus: 2, model: 'test cpu', node: 'v20.0.0' },
    layout: { peerCores: ['0-1', '0-1'], loaderCores: '0-1', loaders: 2 },
    startedAt: '2026-12-06T00:00:00.000Z',
    durationSeconds: 200,
    onePeer: { skipped: 'not run' },
    join: { skipped: '--no-join' },
    cluster,
  });
  it('shows each peer\'s RSS idle and at each step, and the slope of each', () => {
    const page = renderScaleMarkdown(resultOf(twoPeers));
    expect(page).toContain('| 2 peers: RSS each, idle and by instances (each step heartbeating) | idle: 99, 100 MB; 10,000: 120, 121 MB; 100,000: 170.5, 171 MB |');
    expect(page).toContain('| 2 peers: bytes per instance (slope of each peer\'s RSS, least squares) | 530, 525 B |');
    expect(page).not.toContain('slopes of the V8 heap');
    expect(page).not.toContain('listingCacheMaxBytes');
  });
  it('shows the slopes of the heap beside, and the listing cache size the peers ran with', () => {
    const cluster = {
      ...twoPeers,
      points: [
        { instances: 10_000, rssMb: [120, 121], heap: [{ committedMb: 57, usedMb: 45, youngMb: 16 }, { committedMb: 58, usedMb: 44, youngMb: 16 }] },
        { instances: 100_000, rssMb: [170.5, 171], heap: [{ committedMb: 110, usedMb: 95, youngMb: 16 }, { committedMb: 109, usedMb: 94, youngMb: 16 }] },
      ],
      heapSlopes: { committed: [612, 1_001], used: [580, 575], young: [0, 0] },
    };
    const page = renderScaleMarkdown(resultOf(cluster, 0));
    expect(page).toContain('| 2 peers: slopes of the V8 heap committed / in use / young generation committed | 612, 1,001 / 580, 575 / 0, 0 B per instance |');
    expect(page).toContain('peer Node flags: none, limits.listingCacheMaxBytes 0;');
  });
  it('shows the heal, split into the paused peer answering and the others seeing it back where they were measured', () => {
    const heal = { pausedSeconds: 20, registeredMeanwhile: 1_000, agreedMs: 1_450, pausedPeerListedMs: 2_072 };
    const before = renderScaleMarkdown(resultOf({ ...twoPeers, heal }));
    expect(before).toContain('| 2 peers: heal after one peer is stopped 20 s (SIGSTOP) while the others take 1,000 registrations | every digest agreed 1,450 ms after it went on; it listed every instance after 2,072 ms |');
    const split = renderScaleMarkdown(resultOf({ ...twoPeers, heal: { ...heal, pausedPeerAnsweredMs: 812, seenBackMs: [1_020] } }));
    expect(split).toContain('| it answered after 812 ms; the others logged it back after 1,020 ms; every digest agreed 1,450 ms after it went on;');
    const unlogged = renderScaleMarkdown(resultOf({ ...twoPeers, heal: { ...heal, pausedPeerAnsweredMs: 812, seenBackMs: [null] } }));
    expect(unlogged).toContain('| it answered after 812 ms; every digest agreed 1,450 ms');
    const skipped = renderScaleMarkdown(resultOf({ ...twoPeers, heal: { ...heal, pausedPeerAnsweredMs: 812, seenBackMs: [1_020], skippedCalls: 1_204 } }));
    expect(skipped).toContain('| it answered after 812 ms; the others logged it back after 1,020 ms; 1,204 calls abandoned during the pause skipped; every digest agreed');
  });
});

describe('scale benchmark: a peer seen back, from the others\' log lines', () => {
  it('takes the first "peer back" about that peer at or after the time given, and null when none was logged', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-log-'));
    try {
      const file = join(dir, 'peer-1.log');
      const line = (time: number, msg: string, peer: string) => JSON.stringify({ level: 30, time, component: 'membership', peer, msg });
      writeFileSync(file, [line(900, 'peer back', 'peer-5'), line(1_100, 'peer down', 'peer-5'), line(1_300, 'peer back', 'peer-4'), line(1_700, 'peer back', 'peer-5'), '{"cut sh'].join('\n'));
      expect(seenBackAfter(file, 'peer-5', 1_000)).toBe(700);
      expect(seenBackAfter(file, 'peer-3', 1_000)).toBeNull();
      expect(seenBackAfter(file, 'peer-5', 2_000)).toBeNull();
      const other = join(dir, 'peer-2.log');
      writeFileSync(other, line(1_200, 'peer back', 'peer-4'));
      // Each log read; with no time to wait, a peer that has not logged it is null at once.
      await expect(seenBackBy([file, other], 'peer-5', 1_000, 0)).resolves.toEqual([700, null]);
      await expect(seenBackBy([file], 'peer-5', 1_000, 5_000)).resolves.toEqual([700]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('scale benchmark: markdown of a result recorded before the heap and the flags were', () => {
  it('leaves out what it does not hold, and says the flags were not recorded', () => {
    const result: ScaleResult = {
      options: { instances: 100_000, cores: 2, services: 1_000, peers: 5, heartbeatSeconds: 30, budgetMs: 600_000 },
      machine: { cpus: 2, model: 'test cpu', node: 'v20.0.0' },
      layout: { peerCores: ['0-1'], loaderCores: '0-1', loaders: 2 },
      startedAt: '2026-12-04T00:00:00.000Z',
      durationSeconds: 37,
      onePeer: { idleRssMb: 104.7, points: [{ instances: 100_000, rssMb: 183.4 }], slopeBytesPerInstance: 772, aboveIdleBytesPerInstance: 825, rSquared: 0.999, settledRssMb: 168.4, settledAboveIdleBytesPerInstance: 668, registerPerSecond: 20_370, coldRegisterPerSecond: 8_596, errors: 0 },
      join: { skipped: '--no-join' },
      cluster: { skipped: '--no-cluster' },
    };
    const page = renderScaleMarkdown(result);
    expect(page).toContain('peer Node flags: not recorded;');
    expect(page).toContain('| one peer: RSS by instances (heap in use) | 100,000: 183.4 MB |');
    expect(page).toContain('| one peer: bytes per instance (slope of RSS, least squares) | 772 B (R² 0.999); above idle at 100,000: 825 B |');
    expect(page).toContain('| one peer: RSS at the end after 20 s idle | 168.4 MB: 668 B per instance above idle |');
  });
});

describe('scale benchmark: --listing-cache-bytes', () => {
  it('leaves the peers\' default unless told, and takes a whole number of bytes, 0 included', () => {
    expect(listingCacheBytesOf(undefined)).toBeUndefined();
    expect(listingCacheBytesOf('0')).toBe(0);
    expect(listingCacheBytesOf('8388608')).toBe(8_388_608);
  });
  it('refuses what is not a whole number of bytes', () => {
    for (const wrong of ['', ' ', '-1', '1.5', '8MB']) expect(() => listingCacheBytesOf(wrong)).toThrow('is not a whole number of bytes');
  });
});

describe('scale benchmark: --node-flags', () => {
  it('runs the peers with the project flags unless told, with none when empty, and with the flags named', () => {
    expect(nodeFlagsOf(undefined)).toEqual(PEER_NODE_FLAGS);
    expect(nodeFlagsOf('')).toEqual([]);
    expect(nodeFlagsOf(' --max-semi-space-size=4   --max-old-space-size=900 ')).toEqual(['--max-semi-space-size=4', '--max-old-space-size=900']);
  });
  it('refuses what is not a flag (it would be taken for the script)', () => {
    expect(() => nodeFlagsOf('--max-semi-space-size=4 dist/other.js')).toThrow('"dist/other.js" is not a Node flag');
  });
});
