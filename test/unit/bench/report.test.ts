import { describe, expect, it } from 'vitest';
import { renderAscii, renderSvg, type Panel } from '../../../bench/chart.js';
import { linearFit } from '../../../bench/memory.js';
import type { ClusterPoint } from '../../../bench/replication.js';
import { median } from '../../../bench/single-peer.js';
import { readScaleRows, type DiscoverPoint, type ReadScaleResult } from '../../../bench/read-scale.js';
import { renderResultsPage, type BenchResults, type ChaosRunSummary, type ChaosSweepSummary } from '../../../bench/report.js';

const route = (peer: number, reference: number, target: number) => ({
  peer: { opsPerSecond: peer, p50Ms: 1, p99Ms: 5, ops: peer * 3, errors: 0 },
  reference: { opsPerSecond: reference, p50Ms: 0.5, p99Ms: 3, ops: reference * 3, errors: 0 },
  ratio: Math.round((peer / reference) * 100) / 100,
  pairRatios: [peer / reference],
  target,
});

function point(peers: number, instances: number, p99Ms: number): ClusterPoint {
  return {
    peers,
    instances,
    latency: { writesSent: 5_000, errors: 0, skipped: 0, receivers: [], p50Ms: 10, p99Ms, polledAllP50Ms: 12, polledAllP99Ms: p99Ms + 5, polledSamples: 50, writeAckP50Ms: 1, writeAckP99Ms: 4 },
    idle: { seconds: 10, heartbeatsPerSecond: 1_000, heartbeatErrors: 0, pairs: [], maxBytesPerSecond: 900, clientHeartbeatBytesPerSecond: 400_000 },
    convergence: { divergent: instances / 100, convergedMs: 1_500, keysRepairedByAntiEntropy: instances / 100, unpartitionedMs: 300 },
    loadSeconds: 3,
  };
}

function results(): BenchResults {
  return {
    mode: 'full',
    startedAt: '2026-11-29T17:00:00.000Z',
    durationSeconds: 420,
    machine: { cpus: 2, model: 'test cpu', node: 'v20.20.2', loadAverageAtStart: [1, 1, 1], pinning: true },
    singlePeer: {
      pinned: true,
      concurrency: 32,
      roundSeconds: 3,
      rounds: 3,
      discoverInstances: 20,
      routes: { register: route(6_000, 10_000, 0.5), heartbeat: route(6_000, 10_000, 0.7), discover: route(9_000, 10_000, 0.8) },
    },
    etcd: { measured: false, reason: 'etcd is not installed and apt-get is not available' },
    memory: {
      points: [
        { instances: 0, peerMb: 60, referenceMb: 50 },
        { instances: 10_000, peerMb: 80, referenceMb: 60 },
        { instances: 50_000, peerMb: 160, referenceMb: 100 },
        { instances: 100_000, peerMb: 260, referenceMb: 150 },
      ],
      peerMbPer10kByStep: [
        { from: 10_000, to: 50_000, mbPer10k: 20 },
        { from: 50_000, to: 100_000, mbPer10k: 20 },
      ],
      fit: { mbPer10k: 22.2, interceptMb: 60, rSquared: 0.99 },
      linear: true,
      targetMb: 200,
      targetInstances: 100_000,
      settleMs: 3_000,
    },
    sse: { measured: false, reason: 'this build has no watch endpoint' },
    cluster: {
      points: [point(3, 100_000, 150), point(3, 1_000, 40), point(3, 10_000, 60), point(5, 10_000, 70), point(7, 10_000, 90)],
      skipped: [],
      primary: { peers: 3, instances: 100_000 },
    },
  };
}

const chaos: ChaosRunSummary[] = [
  {
    seed: 42,
    peers: 3,
    durationS: 90,
    restarts: 'without',
    dataDir: 'data-dir variant SKIPPED',
    ok: false,
    violations: 2,
    violationsByProperty: { 'no-eviction': 2 },
    figures: { convergedAfterMs: 120, callsAnswered: 10, callsToLivePeers: 10, faults: 9, partitions: 3, kills: 2, ops: {} },
    convergenceTargetMs: 5_000,
    at: '2026-11-29T17:10:00.000Z',
    command: 'npm run chaos -- --seed 42 --peers 3',
  },
];

/** A Consul benchmark result from a run before the bare node:http reference. */
const consulFigures = {
  watchers: 1_000,
  writes: 30,
  wakeP50Ms: 20,
  wakeP99Ms: 45,
  allWokenP99Ms: 50,
  woken: 30_000,
  expected: 30_000,
  spuriousWakeups: 0,
  writeAckP50Ms: 1.5,
  writeAckP99Ms: 4,
  rssBeforeMb: 70,
  rssWithWatchersMb: 80,
  rssPerWatcherKb: 10.24,
  idleCpuPercentWithWatchers: 0.3,
  idleCpuPercentBefore: 0.3,
  cpuMsPerWakeAll: 90,
};

describe('the results page', () => {
  const { markdown, svg } = renderResultsPage(results(), chaos, '## Findings\n\nhand-written', 'scaling.svg');
  const row = (start: string) => markdown.split('\n').find((line) => line.startsWith(`| ${start}`)) ?? '';

  it('puts every figure next to its reference, ratio and target, and says plainly when a target is not met', () => {
    expect(row('register throughput')).toContain('| 0.6x | >= 0.5x | yes |');
    expect(row('heartbeat throughput')).toContain('| 0.6x | >= 0.7x | **NO** |');
    expect(row('write-to-visible')).toContain('p99 150 ms');
    expect(row('write-to-visible')).toContain("the write's own round trip");
    expect(row('write-to-visible')).toContain('**NO**');
    expect(row('RSS of a peer with 100,000')).toContain('| <= 200 MB | **NO** |');
    expect(row('memory growth linear')).toContain('| R² 0.99 | R² >= 0.95 | yes |');
  });

  it('shows register and heartbeat at 16 and 64 in flight against issue 36\'s targets, and leaves them out of older runs', () => {
    const base = results();
    const singlePeer = base.singlePeer as Exclude<BenchResults['singlePeer'], { skipped: string }>;
    const writes = [
      { route: 'register' as const, inFlight: 16, ...route(7_200, 10_000, 0.8), pairRatios: [0.7, 0.72, 0.75] },
      { route: 'heartbeat' as const, inFlight: 64, ...route(9_500, 10_000, 0.9) },
    ];
    const page = renderResultsPage({ ...base, singlePeer: { ...singlePeer, writes } }, [], '', 'scaling.svg').markdown;
    const line = (start: string) => page.split('\n').find((text) => text.startsWith(`| ${start}`)) ?? '';
    expect(line('register throughput, one peer, 16 in flight')).toContain('| 0.72x | >= 0.8x | **NO** |');
    expect(line('register throughput, one peer, 16 in flight')).toContain('same answer size');
    expect(line('heartbeat throughput, one peer, 64 in flight')).toContain('| 0.95x | >= 0.9x | yes |');
    expect(page).toContain('| register | 16 | 7,200 |');
    expect(page).toContain('| 0.7-0.75 | >= 0.8x | **NO** |');
    expect(markdown).not.toContain('in flight |');
    expect(markdown).not.toContain('16 in flight');
  });

  it('puts the DNS answers/s next to the bare UDP server, and leaves the rows out of older runs', () => {
    const dns = {
      instances: 100, question: 'q', answerBytes: 4_255, concurrency: 16, rounds: 3, roundSeconds: 3,
      peer: { answersPerSecond: 9_000, lost: 0 }, reference: { answersPerSecond: 10_000, lost: 0 }, ratio: 0.9, pairRatios: [0.85, 0.9, 0.95], target: 0.8,
      registerToAnswer: { samples: 30, p50Ms: 3, p99Ms: 9, writeAckP50Ms: 2, writeAckP99Ms: 8 },
    };
    const page = renderResultsPage({ ...results(), dns }, [], '', 'scaling.svg').markdown;
    const dnsRow = page.split('\n').find((line) => line.startsWith('| DNS answers/s')) ?? '';
    expect(dnsRow).toContain('9,000/s');
    expect(dnsRow).toContain('bare UDP server sending the same answer 10,000/s');
    expect(dnsRow).toContain('| 0.9x (rounds 0.85-0.95) | >= 0.8x | yes |');
    expect(page).toContain('| register to the new address in a DNS answer | p50 3 ms, p99 9 ms');
    expect(markdown).not.toContain('DNS answers/s');
  });

  it('puts the Nacos list ratio and the UDP push fan-out in the summary, against their targets', () => {
    const nacos = {
      measuredAt: '2026-12-05T08:00:00.000Z', loadAverage: 6.1, listInstances: 1_000, listBodyBytes: 356_340, listRounds: 6, peerListPerSecond: 2_029.7, bareListPerSecond: 2_365.9, listRatio: 0.86, listRatioMin: 0.8, listRatioMax: 1, peerListCpuUs: 65, bareListCpuUs: 59.4,
      subscribers: 1_000, changes: 20, pushed: 20_000, expectedPushes: 20_000, pushP50Ms: 60, pushP99Ms: 153, cpuMsPerChangeWithSubscribers: 23.5, cpuMsPerChangeWithout: 2, cpuRatio: 11.75,
      udpFloorCpuMsPerChange: 19.2, udpLoadGeneratorCpuMsPerChange: 40, grpcLoadGeneratorCpuMsPerChange: 120, grpcSubscribers: 1_000, grpcPushed: 19_990, grpcExpectedPushes: 20_000, grpcPushP50Ms: 70, grpcPushP99Ms: 129, grpcCpuMsPerChange: 49, grpcCpuRatio: 24.5, grpcFloorCpuMsPerChange: 52.2,
    };
    const page = renderResultsPage({ ...results(), nacos }, [], '', 'scaling.svg').markdown;
    const rows = page.split('\n').filter((line) => line.startsWith('| Nacos'));
    expect(rows[0]).toContain("| 2,029.7/s, 65 µs CPU per list | bare node:http sending the same bytes 2,365.9/s, 59.4 µs CPU per list | 0.86x (rounds 0.8-1); CPU per list 1.09x the bare server's | >= 0.9x | **NO** |");
    expect(rows[1]).toContain('p99 153 ms (20,000/20,000)');
    expect(rows[0]).toContain('6 rounds (bench/nacos.ts at 2026-12-05T08:00:00.000Z, load 6.1)');
    expect(rows[1]).toContain('floor, a bare dgram process sending the same datagram to the same sockets: 19.2 ms');
    expect(rows[1]).toContain('| 11.75x CPU (1.22x the floor) | p99 <= 200 ms, <= 3x CPU | **NO** |');
    expect(rows[1]).toContain('CPU 23.5 ms per change (subscribers, in the load generator: CPU 40 ms per change)');
    expect(rows[2]).toContain('p99 129 ms (19,990/20,000); CPU 49 ms per change (subscribers, in the load generator: CPU 120 ms per change)');
    expect(rows[2]).toContain('a bare grpc-js server writing the same push to as many streams: 52.2 ms');
    expect(rows[2]).toContain('| 24.5x CPU (0.94x the floor) |');
    expect(renderResultsPage({ ...results(), nacos: { skipped: 'no time' } }, [], '', 'scaling.svg').markdown).toContain('| Nacos v1 lists and UDP push | not measured: no time');
  });

  it('reports what was not measured, with why', () => {
    expect(row('against etcd')).toContain('not measured: etcd is not installed');
    expect(row('watch (SSE)')).toContain('not measured: this build has no watch endpoint');
    expect(row('Consul blocking queries')).toContain('not measured: not in this run');
  });

  it('shows the Consul wake-up latency and the cost of its watchers next to their references', () => {
    const consul = consulFigures;
    const page = renderResultsPage({ ...results(), consul }, chaos, '', 'scaling.svg').markdown;
    const line = (start: string) => page.split('\n').find((l) => l.startsWith(`| ${start}`)) ?? '';
    expect(line('Consul blocking query wake-up')).toContain('p50 20 ms, p99 45 ms (all woken: p99 50 ms); 0 woken by another service');
    expect(line('Consul blocking query wake-up')).toContain("the register's own round trip p50 1.5 ms");
    expect(line('cost of 1,000 held Consul')).toContain('RSS +10 MB (10.24 KB each)');
    expect(line('cost of 1,000 held Consul')).toContain('| **NO** |');
  });

  it('sets the Consul wake-up figures beside the bare node:http reference of the same run, with their targets', () => {
    const consul = {
      ...consulFigures,
      wakeP99Ms: 90,
      allWokenP99Ms: 95,
      cpuMsPerWakeAll: 60,
      answerBytes: 32_400,
      reference: { wakeP50Ms: 15, wakeP99Ms: 60, allWokenP99Ms: 70, woken: 30_000, cpuMsPerWakeAll: 30, answerBytes: 32_700 },
      cpuRatio: 2,
    };
    const page = renderResultsPage({ ...results(), consul }, chaos, '', 'scaling.svg').markdown;
    const line = (start: string) => page.split('\n').find((l) => l.startsWith(`| ${start}`)) ?? '';
    const wake = line('Consul blocking query wake-up, 1,000 watchers on one service (32 KB answers)');
    expect(wake).toContain('bare node:http holding as many long polls, one body per change: p50 15 ms, p99 60 ms (all woken: p99 70 ms)');
    expect(wake).toContain('| 1.5x (p99) | p99 <= 100 ms | yes |');
    const cost = line('cost of 1,000 held Consul');
    expect(cost).toContain('60 ms CPU per write that wakes all');
    expect(cost).toContain('bare node:http holding as many long polls, one body per change: 30 ms CPU per write');
    expect(cost).toContain('| 2x CPU | <= 20 ms CPU per write | **NO** |');
  });

  it('records the chaos runs with their seeds and commands, and the hand-written findings', () => {
    expect(markdown).toContain('| 42 | 3 | 90 | **FAIL** (2: no-eviction 2)');
    expect(markdown).toContain('`npm run chaos -- --seed 42 --peers 3`');
    expect(markdown.trimEnd().endsWith('hand-written')).toBe(true);
  });

  it('lists the chaos sweeps under the runs, with how far each got, and none when there is none', () => {
    expect(markdown).not.toContain('Sweeps (');
    const sweep: ChaosSweepSummary = {
      command: 'npm run chaos -- --sweep 40 --seed 8675310 --peers 5',
      firstSeed: 8675310,
      seedsAsked: 40,
      seedsDone: 12,
      seedsPassed: 12,
      lastSeed: 8675321,
      peers: [5],
      durationS: 90,
      restarts: 'both',
      kills: 'both',
      serial: false,
      failure: null,
      running: true,
      startedAt: '2026-12-01T08:50:00.000Z',
      at: '2026-12-01T09:12:00.000Z',
    };
    const page = renderResultsPage(results(), chaos, '', 'scaling.svg', undefined, [sweep]).markdown;
    const line = page.split('\n').find((l) => l.startsWith('| 8675310..8675321')) ?? '';
    expect(line).toContain('| 5 | 90 | running: 12 seeds x 1 form of 40 passed so far, no violation | 2026-12-01T09:12:00.000Z | `npm run chaos -- --sweep 40 --seed 8675310 --peers 5` |');
    expect(page.indexOf('Sweeps (')).toBeGreaterThan(page.indexOf('## Chaos runs'));
  });

  it('shows the multi-region figures against their targets when a run is recorded, and says so when none is', () => {
    expect(markdown).toContain('No multi-region run recorded yet');
    const receivers = [{ peer: 'peer-d', samples: 999, p50Ms: 210, p99Ms: 340 }];
    const withRun = renderResultsPage(results(), chaos, '', 'scaling.svg', {
      at: '2026-11-29T20:00:00.000Z',
      instances: 100_000,
      crossRegionDelayMsEachWay: 80,
      visibility: { p99Ms: 340, polledP50Ms: 220, polledP99Ms: 1_200, polledSamples: 50, targetP99Ms: 1_000, receivers },
      steady: { seconds: 60, heartbeatsPerSecond: 1_500, heartbeatErrors: 0, crossRegionBytesPerSecond: 2_681.7, targetBytesPerSecond: 5_000 },
    }).markdown;
    const line = (start: string) => withRun.split('\n').find((l) => l.startsWith(`| ${start}`)) ?? '';
    expect(line('a write in one region')).toContain('| 340 ms (p50 210 ms) | the added delay: 80 ms each way | < 1,000 ms | yes |');
    expect(line('the same, polled')).toContain('| < 1,000 ms | **NO** |');
    expect(line('cross-region bytes/s')).toContain('| 2,681.7 B/s |');
    expect(line('cross-region bytes/s')).toContain('| < 5,000 B/s | yes |');
  });

  it('draws the scaling curves against instances and against peers', () => {
    expect(svg).not.toBeNull();
    expect(svg!.startsWith('<svg')).toBe(true);
    expect(svg).toContain('peers (10,000 instances)');
    expect(svg).toContain('instances (3 peers)');
    expect(markdown).toContain('![scaling](scaling.svg)');
  });
});

describe('the median of the paired rounds', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([0.9, 0.2, 0.8, 0.7])).toBeCloseTo(0.75);
  });
});

describe('the memory line', () => {
  it('fits a straight line and says how well it fits', () => {
    expect(linearFit([[1, 10], [5, 50], [10, 100]])).toEqual({ mbPer10k: 10, interceptMb: 0, rSquared: 1 });
    const bent = linearFit([[1, 10], [5, 12], [10, 100]]);
    expect(bent.rSquared).toBeLessThan(0.95);
  });
});

describe('charts', () => {
  const panel: Panel = {
    title: 'latency',
    xLabel: 'instances',
    yLabel: 'ms',
    logX: true,
    target: 100,
    series: [
      { name: 'p99', points: [[1_000, 50], [10_000, 100], [100_000, Number.NaN]] },
      { name: 'ref', points: [[1_000, 5], [10_000, 5]], dashed: true },
    ],
  };

  it('draw ASCII bars scaled to the largest value, and say what was not measured', () => {
    const lines = renderAscii(panel, 10).split('\n');
    expect(lines[0]).toBe('latency (ms; by instances), target 100');
    expect(lines[1]).toBe('  p99     1k  ##### 50');
    expect(lines[2]).toBe('  p99    10k  ########## 100');
    expect(lines[3]).toBe('  p99   100k  (not measured) ');
    expect(lines[4]).toBe('  ref     1k  # 5');
  });

  it('draw one SVG polyline per series, leaving out missing points, with a target line', () => {
    const svg = renderSvg('title', [panel]);
    expect(svg.match(/<polyline/g)).toHaveLength(2);
    expect(svg.match(/<circle/g)).toHaveLength(4);
    expect(svg).toContain('stroke-dasharray="5,4"');
    expect(svg).toContain('target 100');
  });
});

describe('the read-scale rows', () => {
  const discover = { instances: 100, bytes: 47_104, peerPerSecond: 8_850, barePerSecond: 13_391, ratio: 0.66, ratioRange: [0.6, 0.7] as [number, number] };
  const result = (point: DiscoverPoint): ReadScaleResult => ({ instances: 100_000, pinned: true, discover: [point], fullFetch: { cold: {} as ReadScaleResult['fullFetch']['cold'], points: [] }, sse: [], crossPeer: { writes: 60, received: 60, p50Ms: 1, p99Ms: 2 } });

  it('shows the bare fastify ceiling next to the bare node:http reference when it was measured', () => {
    const [row] = readScaleRows(result({ ...discover, fastifyPerSecond: 10_900, fastifyRatio: 0.81 }));
    expect(row!.reference).toBe("bare node:http sending the same bytes 13,391/s; bare fastify (the stack's ceiling) 10,900/s, 0.81x");
    expect(row!.met).toBe('**NO**');
  });

  it('shows the noise floor, two bare node:http processes against each other, when it was measured', () => {
    const [row] = readScaleRows(result({ ...discover, fastifyPerSecond: 10_900, fastifyRatio: 0.81, bareAgainstBare: 0.97, bareAgainstBareRange: [0.85, 1.12] }));
    expect(row!.reference).toBe(
      "bare node:http sending the same bytes 13,391/s; bare fastify (the stack's ceiling) 10,900/s, 0.81x; noise: two bare node:http processes 0.97x of each other (rounds 0.85-1.12)",
    );
  });

  it('shows the bare node:http reference alone for results written before the ceiling was measured', () => {
    const [row] = readScaleRows(result(discover));
    expect(row!.reference).toBe('bare node:http sending the same bytes 13,391/s');
  });
});
