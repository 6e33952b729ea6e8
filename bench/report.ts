/**
 * Writes bench/RESULTS.md (and bench/scaling.svg) from the last benchmark run
 * (bench/results.json), the last chaos runs (bench/chaos-results.json) and sweeps
 * (bench/chaos-sweeps.json): every figure next to the reference measured in the same run, its
 * ratio and its target, then the details, the scaling curves, the chaos runs with their seeds,
 * and the hand-written findings (bench/findings.md). Both `npm run bench` and `npm run chaos`
 * call it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { renderAscii, renderSvg, type Panel } from './chart.js';
import type { EtcdResult } from './etcd.js';
import { LINEARITY_MIN_R_SQUARED, type MemoryResult } from './memory.js';
import { CLUSTER_TARGETS, type ClusterPoint } from './replication.js';
import type { RoutePair, SinglePeerResult } from './single-peer.js';
import type { DnsResult, TcpAttackResult } from './dns.js';
import type { SseResult } from './sse.js';
import { readScaleRows, type ReadScaleResult } from './read-scale.js';
import type { ConsulResult } from './consul.js';
import type { ConsulCatalogResult, TimedRead } from './consul-catalog.js';
import type { NacosResult } from './nacos.js';
import type { XdsBenchResult } from './xds.js';
import { table } from './lib.js';
import type { ScaleResult } from './scale.js';
import { renderScaleMarkdown } from './scale-report.js';

export interface BenchResults {
  mode: 'full' | 'quick';
  startedAt: string;
  durationSeconds: number;
  machine: { cpus: number; model: string; node: string; loadAverageAtStart: number[]; pinning: boolean };
  singlePeer: SinglePeerResult | { skipped: string };
  etcd: EtcdResult | { skipped: string };
  memory: MemoryResult | { skipped: string };
  sse: SseResult | { skipped: string };
  /** Absent in results written before the Consul API. */
  consul?: ConsulResult | { skipped: string };
  /** Absent in runs from before bench/consul-catalog.ts. */
  consulCatalog?: ConsulCatalogResult | { skipped: string };
  /** Absent in runs from before the DNS listener. */
  dns?: DnsResult | { skipped: string };
  /** Absent in results recorded before the xDS section existed. */
  xds?: XdsBenchResult | { skipped: string };
  nacos?: NacosResult | { skipped: string };
  cluster: { points: ClusterPoint[]; skipped: string[]; primary: { peers: number; instances: number } };
  /** bench/read-scale.ts (absent from runs older than it). */
  readScale?: ReadScaleResult | { skipped: string };
}

/** A full `bench/multi-region.ts` run, kept in bench/multi-region-results.json. */
export interface MultiRegionResult {
  at: string;
  instances: number;
  crossRegionDelayMsEachWay: number;
  visibility: { p99Ms: number; polledP50Ms: number; polledP99Ms: number; polledSamples: number; targetP99Ms: number; receivers: { peer: string; samples: number; p50Ms: number; p99Ms: number }[] };
  steady: { seconds: number; heartbeatsPerSecond: number; heartbeatErrors: number; crossRegionBytesPerSecond: number; targetBytesPerSecond: number };
}

/** The multi-region section: two regions of three peers, a delay between them. */
function multiRegionSection(run: MultiRegionResult): string {
  const v = run.visibility;
  const p50 = Math.max(...v.receivers.map((receiver) => receiver.p50Ms));
  return [
    `Run ${run.at} (\`npx tsx bench/multi-region.ts\`, after \`npm run build\`): two regions of three real peers on 127.0.0.1 (wan profile), every link through a counting proxy that adds ${run.crossRegionDelayMsEachWay} ms each way between the regions; ${num(run.instances)} instances.`,
    '',
    table([
      {
        figure: 'a write in one region visible on every peer of the other, p99 (receiver side)',
        value: `${v.p99Ms} ms (p50 ${p50} ms)`,
        reference: `the added delay: ${run.crossRegionDelayMsEachWay} ms each way`,
        target: `< ${num(v.targetP99Ms)} ms`,
        met: v.p99Ms < v.targetP99Ms ? 'yes' : '**NO**',
      },
      {
        figure: `the same, polled by a client (${v.polledSamples} writes)`,
        value: `${v.polledP99Ms} ms (p50 ${v.polledP50Ms} ms)`,
        reference: '',
        target: `< ${num(v.targetP99Ms)} ms`,
        met: v.polledP99Ms < v.targetP99Ms ? 'yes' : '**NO**',
      },
      {
        figure: `cross-region bytes/s (both directions, on the wire), ${num(run.instances)} heartbeating instances`,
        value: `${num(run.steady.crossRegionBytesPerSecond)} B/s`,
        reference: `${num(run.steady.heartbeatsPerSecond)} heartbeats/s from clients, ${run.steady.heartbeatErrors} errors`,
        target: `< ${num(run.steady.targetBytesPerSecond)} B/s`,
        met: run.steady.crossRegionBytesPerSecond < run.steady.targetBytesPerSecond ? 'yes' : '**NO**',
      },
    ]),
  ].join('\n');
}

export interface ChaosRunSummary {
  seed: number;
  peers: number;
  durationS: number;
  restarts: string;
  dataDir: string;
  ok: boolean;
  violations: number;
  violationsByProperty?: Record<string, number>;
  figures: { convergedAfterMs: number | null; callsAnswered: number; callsToLivePeers: number; faults: number; partitions: number; kills: number; ops: Record<string, number> };
  convergenceTargetMs: number;
  at: string;
  command: string;
}

/**
 * One `npm run chaos -- --sweep N` (kept in bench/chaos-sweeps.json, the latest of each
 * command): N seeds run one after another, every cluster size for each, stopped at the first
 * failure. Written after every seed, so a sweep still running shows how far it got.
 */
export interface ChaosSweepSummary {
  command: string;
  firstSeed: number;
  seedsAsked: number;
  /** Seeds every form of which ran (passed, or the failing one). */
  seedsDone: number;
  /** Seeds every form of which passed. */
  seedsPassed: number;
  lastSeed: number | null;
  peers: number[];
  durationS: number;
  restarts: string;
  kills: string;
  serial: boolean;
  /** The first failing run (the sweep stops there), with the command that replays it. */
  failure: { seed: number; peers: number; violations: number; violationsByProperty: Record<string, number>; replay: string } | null;
  /** A run that could not be carried out (its cluster did not start, say): the sweep stopped there, with no verdict. */
  error?: { seed: number; peers: number; message: string; replay: string } | null;
  /** True while the sweep runs (or if it was killed before its end). */
  running: boolean;
  startedAt: string;
  at: string;
}

const file = (name: string) => new URL(`./${name}`, import.meta.url);
const met = (ok: boolean) => (ok ? 'yes' : '**NO**');
const skipped = (value: object): value is { skipped: string } => 'skipped' in value;
const num = (value: number) => value.toLocaleString('en-US');
const round1 = (value: number) => Math.round(value * 10) / 10;

/** The xDS section's rows: register-to-route latency and the cost of the ADS streams. */
function xdsRows(xds: BenchResults['xds']): Record<string, string>[] {
  if (!xds) return [];
  if (skipped(xds)) return [{ figure: 'xDS register to route', value: `not measured: ${xds.skipped}`, reference: '', ratio: '', target: 'none set', met: 'not measured' }];
  return [
    {
      figure: 'xDS: register on A to a grpc-js-xds client of B routing to it',
      value: `p50 ${xds.routeP50Ms} ms, p99 ${xds.routeP99Ms} ms (${xds.registers} registers)`,
      reference: `the register's own round trip p50 ${xds.writeAckP50Ms} ms, p99 ${xds.writeAckP99Ms} ms`,
      ratio: '',
      target: 'none set',
      met: '',
    },
    {
      figure: `xDS: ${num(xds.streams)} ADS streams on one ${num(xds.instances)}-instance service, ${xds.changes} changes${xds.measuredAt ? ` (bench/xds.ts at ${xds.measuredAt}, load ${xds.loadAverage})` : ''}`,
      value: `CPU ${xds.cpuMsPerChangeWithStreams} ms per change, RSS ${xds.rssMbWithStreams} MB; every stream has a change: p50 ${xds.fanOutP50Ms} ms, p99 ${xds.fanOutP99Ms} ms (${num(xds.delivered)}/${num(xds.expected)}; load generator CPU ${xds.clientCpuMsPerChange} ms per change)`,
      reference:
        `the same changes, no stream: CPU ${xds.cpuMsPerChangeWithout} ms per change, RSS ${xds.rssMbWithout} MB` +
        (xds.floorCpuMsPerChange === undefined
          ? ''
          : `; floor, a bare grpc-js server writing the same ${num(xds.responseBytes ?? 0)}-byte response to as many streams: CPU ${xds.floorCpuMsPerChange} ms per change (${round2(xds.floorCpuMsPerChange / Math.max(xds.cpuMsPerChangeWithout, 0.1))}x the no-stream change), last stream p50 ${xds.floorFanOutP50Ms} ms, p99 ${xds.floorFanOutP99Ms} ms (its clients' CPU ${xds.floorClientCpuMsPerChange} ms per change)`) +
        (xds.http2FloorCpuMsPerChange === undefined
          ? ''
          : `; node:http2 alone writing the same frame, ACKs not decoded: CPU ${xds.http2FloorCpuMsPerChange} ms per change (${round2(xds.http2FloorCpuMsPerChange / Math.max(xds.cpuMsPerChangeWithout, 0.1))}x the no-stream change), last stream p50 ${xds.http2FloorFanOutP50Ms} ms, p99 ${xds.http2FloorFanOutP99Ms} ms`),
      ratio: xds.cpuMsPerChangeWithout > 0 ? `${round2(xds.cpuMsPerChangeWithStreams / xds.cpuMsPerChangeWithout)}x CPU${xds.floorCpuMsPerChange === undefined ? '' : ` (${floorRatio(xds.cpuMsPerChangeWithStreams, xds.floorCpuMsPerChange)}x the floor)`}` : '',
      target: '<= 3x CPU, p99 <= 150 ms',
      met: met(xds.cpuMsPerChangeWithStreams <= 3 * xds.cpuMsPerChangeWithout && xds.fanOutP99Ms <= 150),
    },
  ];
}

const round2 = (value: number) => Math.round(value * 100) / 100;

/** The Nacos section's rows (bench/nacos.ts): v1 lists against a bare server, and the UDP push fan-out with its CPU per change. */
function nacosRows(nacos: BenchResults['nacos']): Record<string, string>[] {
  if (!nacos) return [];
  if (skipped(nacos)) return [{ figure: 'Nacos v1 lists and UDP push', value: `not measured: ${nacos.skipped}`, reference: '', ratio: '', target: '>= 0.9x; p99 <= 200 ms, <= 3x CPU', met: 'not measured' }];
  return [
    {
      figure: `Nacos v1 instance/list of a ${num(nacos.listInstances)}-instance service (${num(nacos.listBodyBytes)} B), ${nacos.listRounds} rounds (bench/nacos.ts at ${nacos.measuredAt}, load ${nacos.loadAverage})`,
      value: `${num(nacos.peerListPerSecond)}/s, ${nacos.peerListCpuUs} µs CPU per list`,
      reference: `bare node:http sending the same bytes ${num(nacos.bareListPerSecond)}/s, ${nacos.bareListCpuUs} µs CPU per list`,
      ratio: `${nacos.listRatio}x (rounds ${nacos.listRatioMin}-${nacos.listRatioMax}); CPU per list ${floorRatio(nacos.peerListCpuUs, nacos.bareListCpuUs)}x the bare server's`,
      target: '>= 0.9x',
      met: met(nacos.listRatio >= 0.9),
    },
    {
      figure: `Nacos: ${num(nacos.subscribers)} UDP subscribers of one service, ${nacos.changes} changes`,
      value: `every subscriber pushed: p50 ${nacos.pushP50Ms} ms, p99 ${nacos.pushP99Ms} ms (${num(nacos.pushed)}/${num(nacos.expectedPushes)}); CPU ${nacos.cpuMsPerChangeWithSubscribers} ms per change${loadGenerator(nacos.udpLoadGeneratorCpuMsPerChange)}`,
      reference: `the same change, no subscriber: CPU ${nacos.cpuMsPerChangeWithout} ms per change; floor, a bare dgram process sending the same datagram to the same sockets: ${nacos.udpFloorCpuMsPerChange} ms`,
      ratio: `${nacos.cpuRatio}x CPU (${floorRatio(nacos.cpuMsPerChangeWithSubscribers, nacos.udpFloorCpuMsPerChange)}x the floor)`,
      target: 'p99 <= 200 ms, <= 3x CPU',
      met: met(nacos.pushP99Ms <= 200 && nacos.cpuRatio <= 3),
    },
    {
      figure: `Nacos: ${num(nacos.grpcSubscribers)} gRPC (v2) subscribers of one service, ${nacos.changes} changes`,
      value: `every subscriber pushed: p50 ${nacos.grpcPushP50Ms} ms, p99 ${nacos.grpcPushP99Ms} ms (${num(nacos.grpcPushed)}/${num(nacos.grpcExpectedPushes)}); CPU ${nacos.grpcCpuMsPerChange} ms per change${loadGenerator(nacos.grpcLoadGeneratorCpuMsPerChange)}`,
      reference: `the same change, no subscriber: CPU ${nacos.cpuMsPerChangeWithout} ms per change; floor, a bare grpc-js server writing the same push to as many streams: ${nacos.grpcFloorCpuMsPerChange} ms`,
      ratio: `${nacos.grpcCpuRatio}x CPU (${floorRatio(nacos.grpcCpuMsPerChange, nacos.grpcFloorCpuMsPerChange)}x the floor)`,
      target: 'p99 <= 200 ms, <= 3x CPU',
      met: met(nacos.grpcPushP99Ms <= 200 && nacos.grpcCpuRatio <= 3),
    },
  ];
}

/** The subscribers' own CPU per change, where the run measured it (results before 2026-12-05 08:10 UTC did not). */
function loadGenerator(cpuMs: number | undefined): string {
  return cpuMs === undefined ? '' : ` (subscribers, in the load generator: CPU ${cpuMs} ms per change)`;
}

/** A cost over its floor (the least the same sending costs a bare process), to two places. */
function floorRatio(costMs: number, floorMs: number): number {
  return round2(costMs / Math.max(floorMs, 0.1));
}

/** The columns of one route's paired rounds against the bare server (bench/single-peer.ts). */
function pairColumns(r: RoutePair): Record<string, string | number> {
  return {
    'peer ops/s': num(r.peer.opsPerSecond),
    'peer p50 / p99 (ms)': `${r.peer.p50Ms} / ${r.peer.p99Ms}`,
    'bare ops/s': num(r.reference.opsPerSecond),
    'bare p50 / p99 (ms)': `${r.reference.p50Ms} / ${r.reference.p99Ms}`,
    'ratio (median of rounds)': `${r.ratio}x`,
    'rounds, lowest-highest': `${Math.min(...r.pairRatios)}-${Math.max(...r.pairRatios)}`,
    target: `>= ${r.target}x`,
    met: met(r.ratio >= r.target),
    errors: r.peer.errors + r.reference.errors,
  };
}

function summaryRows(results: BenchResults): Record<string, string>[] {
  const rows: Record<string, string>[] = [];
  const { singlePeer, etcd, memory, sse, consul, cluster } = results;
  if (!skipped(singlePeer)) {
    for (const [route, r] of Object.entries(singlePeer.routes)) {
      rows.push({
        figure: `${route} throughput, one peer`,
        value: `${num(r.peer.opsPerSecond)}/s (p50 ${r.peer.p50Ms} ms, p99 ${r.peer.p99Ms} ms)`,
        reference: `bare fastify ${num(r.reference.opsPerSecond)}/s (p50 ${r.reference.p50Ms} ms, p99 ${r.reference.p99Ms} ms)`,
        ratio: `${r.ratio}x`,
        target: `>= ${r.target}x`,
        met: met(r.ratio >= r.target),
      });
    }
    for (const w of singlePeer.writes ?? []) {
      rows.push({
        figure: `${w.route} throughput, one peer, ${w.inFlight} in flight`,
        value: `${num(w.peer.opsPerSecond)}/s (p50 ${w.peer.p50Ms} ms, p99 ${w.peer.p99Ms} ms)`,
        reference: `bare fastify ${num(w.reference.opsPerSecond)}/s, same answer size`,
        ratio: `${w.ratio}x`,
        target: `>= ${w.target}x`,
        met: met(w.ratio >= w.target),
      });
    }
  } else rows.push({ figure: 'single peer vs bare fastify', value: `skipped: ${singlePeer.skipped}`, reference: '', ratio: '', target: '', met: '' });
  if (!skipped(etcd) && etcd.measured && etcd.register && etcd.list) {
    rows.push({
      figure: `registration rate, ${num(etcd.instances!)} instances with leases`,
      value: `${num(etcd.register.oursPerSecond)}/s`,
      reference: `etcd ${etcd.version?.replace('etcd Version: ', '')} ${num(etcd.register.etcdPerSecond)}/s (lease grant + put)`,
      ratio: `${etcd.register.ratio}x`,
      target: `>= ${etcd.register.target}x`,
      met: met(etcd.register.ratio >= etcd.register.target),
    });
    rows.push({
      figure: `list a ${num(etcd.instances!)}-instance service (p50)`,
      value: `${etcd.list.oursP50Ms} ms`,
      reference: `etcd range ${etcd.list.etcdP50Ms} ms`,
      ratio: `${etcd.list.ratio}x faster`,
      target: 'none set',
      met: '',
    });
  } else {
    const reason = skipped(etcd) ? etcd.skipped : etcd.reason;
    rows.push({ figure: 'against etcd', value: `not measured: ${reason}`, reference: '', ratio: '', target: '>= 5x', met: 'not measured' });
  }
  const primary = cluster.points.find((p) => p.peers === cluster.primary.peers && p.instances === cluster.primary.instances);
  if (primary) {
    const l = primary.latency;
    rows.push({
      figure: `write-to-visible on all ${primary.peers - 1} other peers at 1,000 writes/s`,
      value: `p50 ${l.p50Ms} ms, p99 ${l.p99Ms} ms (polled: p99 ${l.polledAllP99Ms} ms)`,
      reference: `the write's own round trip p50 ${l.writeAckP50Ms} ms, p99 ${l.writeAckP99Ms} ms`,
      ratio: l.writeAckP99Ms > 0 ? `${Math.round((l.p99Ms / l.writeAckP99Ms) * 100) / 100}x (p99)` : '',
      target: `p99 < ${CLUSTER_TARGETS.latencyP99Ms} ms`,
      met: met(l.p99Ms < CLUSTER_TARGETS.latencyP99Ms),
    });
    const c = primary.convergence;
    rows.push({
      figure: `agreement after a partition heal, ${num(primary.instances)} instances, 1% (${num(c.divergent)}) divergent`,
      value: `${c.convergedMs} ms`,
      reference: `the same changes without a partition: ${c.unpartitionedMs} ms`,
      ratio: c.unpartitionedMs > 0 ? `${Math.round((c.convergedMs / c.unpartitionedMs) * 10) / 10}x` : '',
      target: `< ${CLUSTER_TARGETS.convergenceMs} ms`,
      met: met(c.convergedMs < CLUSTER_TARGETS.convergenceMs),
    });
    const idle = primary.idle;
    rows.push({
      figure: `bytes/s between two idle peers, ${num(primary.instances)} heartbeating instances`,
      value: `${num(idle.maxBytesPerSecond)} B/s (worst pair)`,
      reference: `the heartbeats themselves: ${num(idle.clientHeartbeatBytesPerSecond)} B/s at ${num(idle.heartbeatsPerSecond)}/s`,
      ratio: idle.clientHeartbeatBytesPerSecond > 0 ? `${Math.round((idle.maxBytesPerSecond / idle.clientHeartbeatBytesPerSecond) * 1_000) / 1_000}x` : '',
      target: `< ${num(CLUSTER_TARGETS.idleBytesPerSecond)} B/s`,
      met: met(idle.maxBytesPerSecond < CLUSTER_TARGETS.idleBytesPerSecond),
    });
  } else rows.push({ figure: 'cluster figures', value: `not measured: ${cluster.skipped.join('; ') || 'no point ran'}`, reference: '', ratio: '', target: '', met: '' });
  if (!skipped(sse) && sse.measured) {
    rows.push({
      figure: `watch (SSE) notification, ${num(sse.subscribers!)} subscribers`,
      value: `p50 ${sse.notifyP50Ms} ms, p99 ${sse.notifyP99Ms} ms (all notified: p99 ${sse.allNotifiedP99Ms} ms)`,
      reference: `the write's own round trip p50 ${sse.writeAckP50Ms} ms, p99 ${sse.writeAckP99Ms} ms`,
      ratio: '',
      target: 'none set',
      met: '',
    });
  } else {
    rows.push({ figure: 'watch (SSE) notification, 1,000 subscribers', value: `not measured: ${skipped(sse) ? sse.skipped : sse.reason}`, reference: '', ratio: '', target: 'none set', met: 'not measured' });
  }
  if (results.readScale !== undefined) {
    if (skipped(results.readScale)) rows.push({ figure: 'reads at scale (bench/read-scale.ts)', value: `not measured: ${results.readScale.skipped}`, reference: '', ratio: '', target: '', met: 'not measured' });
    else rows.push(...readScaleRows(results.readScale));
  }
  if (consul && !skipped(consul)) {
    const reference = consul.reference;
    const bytes = consul.answerBytes === undefined ? '' : ` (${num(Math.round(consul.answerBytes / 1024))} KB answers)`;
    rows.push({
      figure: `Consul blocking query wake-up, ${num(consul.watchers)} watchers on one service${bytes}`,
      value: `p50 ${consul.wakeP50Ms} ms, p99 ${consul.wakeP99Ms} ms (all woken: p99 ${consul.allWokenP99Ms} ms); ${consul.spuriousWakeups} woken by another service`,
      reference: reference
        ? `bare node:http holding as many long polls, one body per change: p50 ${reference.wakeP50Ms} ms, p99 ${reference.wakeP99Ms} ms (all woken: p99 ${reference.allWokenP99Ms} ms); the register's own round trip p50 ${consul.writeAckP50Ms} ms`
        : `the register's own round trip p50 ${consul.writeAckP50Ms} ms, p99 ${consul.writeAckP99Ms} ms`,
      ratio: reference && reference.wakeP99Ms > 0 ? `${round2(consul.wakeP99Ms / reference.wakeP99Ms)}x (p99)` : '',
      target: 'p99 <= 100 ms',
      met: met(consul.wakeP99Ms <= 100),
    });
    rows.push({
      figure: `cost of ${num(consul.watchers)} held Consul blocking queries`,
      value: `${consul.cpuMsPerWakeAll} ms CPU per write that wakes all; RSS +${round1(consul.rssWithWatchersMb - consul.rssBeforeMb)} MB (${consul.rssPerWatcherKb} KB each), idle CPU ${consul.idleCpuPercentWithWatchers}% of a core`,
      reference: reference
        ? `bare node:http holding as many long polls, one body per change: ${reference.cpuMsPerWakeAll} ms CPU per write; the peer before: RSS ${consul.rssBeforeMb} MB, idle CPU ${consul.idleCpuPercentBefore}%`
        : `the peer before: RSS ${consul.rssBeforeMb} MB, idle CPU ${consul.idleCpuPercentBefore}%`,
      ratio: consul.cpuRatio === undefined ? '' : `${consul.cpuRatio}x CPU`,
      target: '<= 20 ms CPU per write',
      met: met(consul.cpuMsPerWakeAll <= 20),
    });
  } else {
    const why = consul === undefined ? 'not in this run' : consul.skipped;
    rows.push({ figure: 'Consul blocking queries, 1,000 watchers', value: `not measured: ${why}`, reference: '', ratio: '', target: 'none set', met: 'not measured' });
  }
  rows.push(...consulCatalogRows(results.consulCatalog));
  rows.push(...dnsRows(results.dns));
  rows.push(...xdsRows(results.xds));
  rows.push(...nacosRows(results.nacos));
  if (!skipped(memory)) {
    const idle = memory.points[0]!;
    const last = memory.points.at(-1)!;
    rows.push({
      figure: 'RSS of a peer, idle',
      value: `${idle.peerMb} MB`,
      reference: `bare fastify ${idle.referenceMb} MB`,
      ratio: `${Math.round((idle.peerMb / idle.referenceMb) * 10) / 10}x`,
      target: '',
      met: '',
    });
    rows.push({
      figure: `RSS of a peer with ${num(last.instances)} instances (5 metadata keys)`,
      value: `${last.peerMb} MB`,
      reference: `bare fastify + Map ${last.referenceMb} MB`,
      ratio: `${Math.round((last.peerMb / last.referenceMb) * 10) / 10}x`,
      target: last.instances === memory.targetInstances ? `<= ${memory.targetMb} MB` : `<= ${memory.targetMb} MB at 100k (not reached in this mode)`,
      met: last.instances === memory.targetInstances ? met(last.peerMb <= memory.targetMb) : '',
    });
    if (memory.listed) {
      const { listed } = memory;
      rows.push({
        figure: `RSS of a peer with ${num(listed.instances)} instances, every service listed once`,
        value: `${listed.peerMb} MB`,
        reference: `bare fastify + Map ${listed.referenceMb} MB`,
        ratio: `${Math.round((listed.peerMb / listed.referenceMb) * 10) / 10}x`,
        target: listed.instances === memory.targetInstances ? `<= ${memory.targetMb} MB` : '',
        met: listed.instances === memory.targetInstances ? met(listed.peerMb <= memory.targetMb) : '',
      });
    }
    rows.push({
      figure: 'memory growth linear in the instance count',
      value: `${memory.fit.mbPer10k} MB per 10k (line through ${memory.points.filter((p) => p.instances > 0).map((p) => num(p.instances)).join(', ')}); steps: ${memory.peerMbPer10kByStep.map((s) => `${s.mbPer10k} MB/10k (${num(s.from)}-${num(s.to)})`).join(', ')}`,
      reference: '',
      ratio: `R² ${memory.fit.rSquared}`,
      target: `R² >= ${LINEARITY_MIN_R_SQUARED}`,
      met: met(memory.linear),
    });
  }
  return rows;
}

/** The DNS rows of the summary: answers per second against a bare UDP server, and register to answer. */
function consulCatalogRows(result: BenchResults['consulCatalog']): Record<string, string>[] {
  if (result === undefined) return [];
  if (skipped(result)) return [{ figure: "Consul's whole-registry reads", value: `not measured: ${result.skipped}`, reference: '', ratio: '', target: 'none set', met: 'not measured' }];
  const kb = (bytes: number) => (bytes >= 1_048_576 ? `${round1(bytes / 1_048_576)} MB` : `${round1(bytes / 1_024)} KB`);
  const read = (r: TimedRead) => `${r.reads === 1 ? r.p50Ms : `p50 ${r.p50Ms}, max ${r.maxMs}`} ms (${kb(r.bytes)}); longest heartbeat meanwhile ${r.heartbeatMaxMs} ms${r.heartbeatErrors ? `, ${r.heartbeatErrors} failed` : ''}`;
  const reference = `native GET /v1/services (every service, its counts) read alike: ${read(result.nativeServices)}`;
  const at = `${num(result.instances)} instances in ${num(result.services)} services`;
  return [
    { figure: `Consul GET /v1/catalog/services, ${at}, first read`, value: read(result.catalogCold), reference, ratio: '', target: 'none set', met: '' },
    { figure: `Consul GET /v1/catalog/services, ${at}, once a second (${result.catalogWarm.reads} reads)`, value: read(result.catalogWarm), reference, ratio: '', target: 'none set', met: '' },
    { figure: `Consul GET /v1/agent/services, ${at}, all this peer's (${result.agentServices.reads} reads)`, value: read(result.agentServices), reference, ratio: '', target: 'none set', met: '' },
    ...(result.healthService
      ? [{ figure: `Consul GET /v1/health/service/NAME, ${num(result.instances / result.services)} instances, once a second (${result.healthService.reads} reads)`, value: read(result.healthService), reference, ratio: '', target: 'none set', met: '' }]
      : []),
  ];
}

function dnsAttackRow(a: TcpAttackResult): Record<string, string> {
  return {
    figure: `DNS TCP attack: ${a.connections} connections x ${a.queriesEach} pipelined ${a.answerBytes}-byte TXT answers never read, ${a.seconds} s`,
    value: `RSS +${a.rssGrowthMb} MB; heartbeat max ${a.heartbeatMaxMs} ms (p99 ${a.heartbeatP99Ms} ms)`,
    reference: `RSS before ${a.rssBeforeMb} MB; heartbeat max with no attack just before ${a.quiet?.heartbeatMaxMs ?? '?'} ms`,
    ratio: '',
    target: `<= ${a.targets.rssGrowthMb} MB, <= ${a.targets.heartbeatMaxMs} ms`,
    met: met(a.rssGrowthMb <= a.targets.rssGrowthMb && a.heartbeatMaxMs <= a.targets.heartbeatMaxMs),
  };
}

function dnsRows(dns: BenchResults['dns']): Record<string, string>[] {
  if (!dns) return [];
  if (skipped(dns)) return [{ figure: 'DNS answers/s, 100-instance service', value: `not measured: ${dns.skipped}`, reference: '', ratio: '', target: '>= 0.8x', met: 'not measured' }];
  const r = dns.registerToAnswer;
  return [
    {
      figure: `DNS answers/s, ${dns.instances}-instance service (${dns.answerBytes}-byte UDP answer)`,
      value: `${num(dns.peer.answersPerSecond)}/s`,
      reference: `bare UDP server sending the same answer ${num(dns.reference.answersPerSecond)}/s`,
      ratio: `${dns.ratio}x (rounds ${Math.min(...dns.pairRatios)}-${Math.max(...dns.pairRatios)})`,
      target: `>= ${dns.target}x`,
      met: met(dns.ratio >= dns.target),
    },
    {
      figure: 'register to the new address in a DNS answer',
      value: `p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms (${r.samples} registers)`,
      reference: `the register's own round trip p50 ${r.writeAckP50Ms} ms, p99 ${r.writeAckP99Ms} ms`,
      ratio: '',
      target: 'none set',
      met: '',
    },
    ...(dns.tcpAttack ? [dnsAttackRow(dns.tcpAttack)] : []),
  ];
}

function scalingPanels(results: BenchResults): { instances: Panel[]; peers: Panel[] } {
  const { points, primary } = results.cluster;
  const byInstances = points.filter((p) => p.peers === primary.peers).sort((a, b) => a.instances - b.instances);
  const peerAxisInstances = points.filter((p) => p.peers !== primary.peers)[0]?.instances;
  const byPeers = points.filter((p) => p.instances === peerAxisInstances).sort((a, b) => a.peers - b.peers);
  const make = (list: ClusterPoint[], x: (p: ClusterPoint) => number, xLabel: string, logX: boolean): Panel[] => [
    {
      title: 'write-to-visible at 1,000 writes/s',
      xLabel,
      yLabel: 'ms',
      logX,
      target: CLUSTER_TARGETS.latencyP99Ms,
      series: [
        { name: 'p99 (all peers)', points: list.map((p) => [x(p), p.latency.p99Ms]) },
        { name: 'p50 (all peers)', points: list.map((p) => [x(p), p.latency.p50Ms]) },
        { name: 'ref: write round trip p99', points: list.map((p) => [x(p), p.latency.writeAckP99Ms]), dashed: true },
      ],
    },
    {
      title: 'agreement after a heal (1% divergent)',
      xLabel,
      yLabel: 'ms',
      logX,
      target: CLUSTER_TARGETS.convergenceMs,
      series: [
        { name: 'after the heal', points: list.map((p) => [x(p), p.convergence.convergedMs]) },
        { name: 'ref: same changes, no partition', points: list.map((p) => [x(p), p.convergence.unpartitionedMs]), dashed: true },
      ],
    },
    {
      title: 'idle bytes/s, worst pair of peers',
      xLabel,
      yLabel: 'B/s',
      logX,
      target: CLUSTER_TARGETS.idleBytesPerSecond,
      series: [{ name: 'between two peers', points: list.map((p) => [x(p), p.idle.maxBytesPerSecond]) }],
    },
  ];
  const instancesPanels = make(byInstances, (p) => p.instances, `instances (${primary.peers} peers)`, true);
  if (!skipped(results.memory)) {
    const loaded = results.memory.points.filter((p) => p.instances > 0);
    instancesPanels.push({
      title: 'RSS of one peer',
      xLabel: 'instances (one peer)',
      yLabel: 'MB',
      logX: true,
      target: results.memory.targetMb,
      series: [
        { name: 'peer', points: loaded.map((p) => [p.instances, p.peerMb]) },
        { name: 'ref: bare fastify + Map', points: loaded.map((p) => [p.instances, p.referenceMb]), dashed: true },
      ],
    });
  }
  const peersPanels = byPeers.length > 1 ? make(byPeers, (p) => p.peers, `peers (${num(peerAxisInstances ?? 0)} instances)`, false) : [];
  return { instances: instancesPanels, peers: peersPanels };
}

function clusterTable(points: ClusterPoint[]): string {
  return table(
    [...points]
      .sort((a, b) => a.peers - b.peers || a.instances - b.instances)
      .map((p) => ({
        peers: p.peers,
        instances: num(p.instances),
        'visible on all, p50 / p99 (ms)': `${p.latency.p50Ms} / ${p.latency.p99Ms}`,
        'polled p50 / p99 (ms)': `${p.latency.polledAllP50Ms} / ${p.latency.polledAllP99Ms}`,
        'ref: write p50 / p99 (ms)': `${p.latency.writeAckP50Ms} / ${p.latency.writeAckP99Ms}`,
        'heal agreement (ms)': p.convergence.convergedMs,
        'ref: no partition (ms)': p.convergence.unpartitionedMs,
        'idle B/s, worst pair': num(p.idle.maxBytesPerSecond),
        'ref: heartbeat B/s': `${num(p.idle.clientHeartbeatBytesPerSecond)} (${num(p.idle.heartbeatsPerSecond)}/s)`,
        'load (s)': p.loadSeconds,
      })),
  );
}

function chaosSection(runs: ChaosRunSummary[]): string {
  if (runs.length === 0) return 'No chaos run recorded yet: `npm run chaos`.';
  const rows = runs.map((run) => ({
    seed: run.seed,
    peers: run.peers,
    'faults (s)': run.durationS,
    result: run.ok ? 'PASS' : `**FAIL** (${run.violations}: ${Object.entries(run.violationsByProperty ?? {}).map(([p, n]) => `${p} ${n}`).join(', ')})`,
    'converged after last heal': run.figures.convergedAfterMs === null ? 'never' : `${run.figures.convergedAfterMs} ms (target ${run.convergenceTargetMs} ms)`,
    'calls answered': `${run.figures.callsAnswered}/${run.figures.callsToLivePeers}`,
    faults: `${run.figures.faults} (${run.figures.partitions} partitions, ${run.figures.kills} kills)`,
    'killed peers restart': run.dataDir.includes('SKIPPED') ? `${run.restarts} a data dir (see below)` : `${run.restarts} a data dir`,
    command: `\`${run.command}\``,
  }));
  const notes = [...new Set(runs.map((run) => run.dataDir).filter((note) => note.includes('SKIPPED')))];
  return [
    'Each run: real peer processes on 127.0.0.1 behind fault proxies, clients on the native API, then the history checker (properties and the 5 s convergence target: docs/benchmarks.md). The command repeats the run\'s choices (timing still varies).',
    '',
    table(rows),
    ...notes.map((note) => `\n${note}.`),
  ].join('\n');
}

/** The sweeps: how many seeds of how many asked, and the first failure with its replay command. */
function sweepSection(sweeps: ChaosSweepSummary[]): string {
  if (sweeps.length === 0) return '';
  const rows = sweeps.map((sweep) => ({
    seeds: sweep.lastSeed === null ? `from ${sweep.firstSeed}` : `${sweep.firstSeed}..${sweep.lastSeed}`,
    peers: sweep.peers.join(', '),
    'faults (s)': sweep.durationS,
    result: sweepResult(sweep),
    'finished or last seed at': sweep.at,
    command: `\`${sweep.command}\``,
  }));
  return ['Sweeps (`npm run chaos -- --sweep N`): seeds one after another, every form of each, stopping at the first failure.', '', table(rows)].join('\n');
}

/** A sweep's result in a few words. Exported for its tests. */
export function sweepResult(sweep: ChaosSweepSummary): string {
  const forms = `${sweep.seedsDone} seeds x ${sweep.peers.length} form${sweep.peers.length === 1 ? '' : 's'}`;
  if (sweep.failure) {
    const f = sweep.failure;
    const properties = Object.entries(f.violationsByProperty).map(([p, n]) => `${p} ${n}`).join(', ');
    return `**FAIL** at seed ${f.seed}, ${f.peers} peers (${f.violations}: ${properties}), after ${sweep.seedsPassed} seeds passed; replay: \`${f.replay}\``;
  }
  if (sweep.error) return `stopped at seed ${sweep.error.seed}, ${sweep.error.peers} peers, with no verdict (${sweep.error.message}), after ${sweep.seedsPassed} seeds passed`;
  if (sweep.running) return `running: ${forms} of ${sweep.seedsAsked} passed so far, no violation`;
  if (sweep.seedsDone < sweep.seedsAsked) return `stopped: ${forms} of ${sweep.seedsAsked} passed, no violation`;
  return `PASS: ${forms}, no violation`;
}

function readJson<T>(name: string): T | undefined {
  return existsSync(file(name)) ? (JSON.parse(readFileSync(file(name), 'utf8')) as T) : undefined;
}

/**
 * Regenerates the results page: bench/RESULTS.md and bench/scaling.svg from bench/results.json
 * (a full run) by default; `quick` results go to bench/out/RESULTS-quick.md and
 * bench/out/scaling-quick.svg, so that a quick run never replaces the recorded full one.
 */
export function writeResultsMarkdown(quickResults?: BenchResults): string {
  const results = quickResults ?? readJson<BenchResults>('results.json');
  const page = file(quickResults ? 'out/RESULTS-quick.md' : 'RESULTS.md');
  const svgName = quickResults ? 'scaling-quick.svg' : 'scaling.svg';
  const chaos = readJson<ChaosRunSummary[]>('chaos-results.json') ?? [];
  const multiRegion = readJson<MultiRegionResult>('multi-region-results.json');
  const sweeps = readJson<ChaosSweepSummary[]>('chaos-sweeps.json') ?? [];
  const findings = existsSync(file('findings.md')) ? readFileSync(file('findings.md'), 'utf8').trim() : '';
  const scale = readJson<ScaleResult>('scale-results.json');
  const { markdown, svg } = renderResultsPage(results, chaos, findings, svgName, multiRegion, sweeps, scale);
  if (svg) writeFileSync(new URL(svgName, page), svg);
  writeFileSync(page, markdown);
  return page.pathname;
}

/** The results page (markdown) and its scaling chart (SVG, when there are cluster points). Pure. */
export function renderResultsPage(
  results: BenchResults | undefined,
  chaos: ChaosRunSummary[],
  findings: string,
  svgName: string,
  multiRegion?: MultiRegionResult,
  sweeps: ChaosSweepSummary[] = [],
  scale?: ScaleResult,
): { markdown: string; svg: string | null } {
  let svg: string | null = null;
  const out: string[] = ['# Benchmark and chaos results', ''];
  out.push('Generated by `npm run bench` and `npm run chaos` (bench/report.ts); do not edit by hand: the findings at the end come from bench/findings.md. How each figure is measured: [docs/benchmarks.md](../docs/benchmarks.md).', '');
  if (results) {
    const m = results.machine;
    out.push(
      `**Benchmark run:** ${results.startedAt}, ${results.mode} mode (\`npm run bench${results.mode === 'quick' ? ' -- --quick' : ''}\`), ${results.durationSeconds} s. Machine: ${m.cpus} CPUs (${m.model}), Node ${m.node}, load average at start ${m.loadAverageAtStart.map((v) => v.toFixed(2)).join(' / ')}. CPU pinning (taskset): ${m.pinning ? 'on: servers on CPU 0, the load generator on the others' : 'off (taskset or a second CPU missing)'}.`,
      '',
      'The machine is small and shared with other engineers\' test runs, so absolute figures are noisy; every speed figure stands next to a reference measured in the same run, with the same load generator, and the ratio is what counts.',
      '',
      '## Summary',
      '',
      table(summaryRows(results)),
      '',
    );
    if (!skipped(results.singlePeer)) {
      const s = results.singlePeer;
      out.push(
        '## One peer against a bare fastify server',
        '',
        `Closed loop, ${s.concurrency} requests in flight, ${s.rounds} paired rounds of ${s.roundSeconds} s per route and server after a warm-up, alternating which server goes first; the ratio is the median over the rounds of the peer's rate over the bare server's in the same round; ops/s and latencies pool every round. Discover lists a service of ${s.discoverInstances} instances; the peer logs at info, the default: a line per registration up to 100 a second, the rest at debug and counted in one line a second (docs/logging.md).`,
        '',
        table(
          Object.entries(s.routes).map(([route, r]) => ({ route, ...pairColumns(r) })),
        ),
        '',
      );
      if (s.writes?.length) {
        out.push(
          'Register and heartbeat again at 16 and at 64 requests in flight (as many connections), against issue 36\'s targets: register >= 0.8x and heartbeat >= 0.9x of the bare route, whose answers carry the same fields as the peer\'s (the same size within a few bytes).',
          '',
          table(
            s.writes.map((w) => ({ route: w.route, 'in flight': String(w.inFlight), ...pairColumns(w) })),
          ),
          '',
        );
      }
    }
    if (!skipped(results.etcd) && results.etcd.measured) {
      const e = results.etcd;
      out.push('## Against etcd', '', `${e.version}, started by the script on 127.0.0.1 with a temporary data dir on ${e.dataDirFilesystem} (etcd fsyncs its log; the peer keeps everything in memory), JSON gateway under \`${e.gatewayPrefix}/\`, ${e.concurrency} requests in flight, both pinned alike. A registration on etcd is a lease grant (TTL 30 s) and a put with that lease; on the peer one register. Registrations in ten chunks alternating which goes first, after an untimed warm-up of as many on other keys; the ratio is the median of the chunks' ratios (lowest ${e.register ? Math.min(...e.register.chunkRatios) : ''}x, highest ${e.register ? Math.max(...e.register.chunkRatios) : ''}x); the rates are totals.`, '');
    }
    if (!skipped(results.memory)) {
      const mem = results.memory;
      out.push(
        '## Memory',
        '',
        `VmRSS from /proc, ${mem.settleMs / 1_000} s after each load step; five metadata keys per instance, 100 services.`,
        '',
        table([
          ...mem.points.map((p) => ({ instances: num(p.instances), 'peer MB': p.peerMb, 'bare fastify + Map MB': p.referenceMb })),
          ...(mem.listed ? [{ instances: `${num(mem.listed.instances)}, every service listed once`, 'peer MB': mem.listed.peerMb, 'bare fastify + Map MB': mem.listed.referenceMb }] : []),
        ]),
        '',
      );
    }
    if (results.cluster.points.length > 0) {
      const panels = scalingPanels(results);
      svg = renderSvg(`Scaling (${results.startedAt}, ${results.mode} mode)`, [...panels.instances, ...panels.peers], 4);
      out.push(
        '## Cluster figures and scaling',
        '',
        `Real peers on 127.0.0.1 (lan profile), every link through a counting proxy. Primary point: ${results.cluster.primary.peers} peers, ${num(results.cluster.primary.instances)} instances.${results.cluster.skipped.length > 0 ? ` Skipped: ${results.cluster.skipped.join('; ')}.` : ''}`,
        '',
        clusterTable(results.cluster.points),
        '',
        `![scaling](${svgName})`,
        '',
        '```',
        [...panels.instances, ...panels.peers].map((panel) => renderAscii(panel)).join('\n\n'),
        '```',
        '',
      );
    }
  } else out.push('No benchmark run recorded yet: `npm run bench`.', '');
  out.push('## Capacity (scale mode)', '', scale ? renderScaleMarkdown(scale) : 'No scale run recorded yet: `npm run bench -- --scale --instances=N --cores=C`.', '');
  out.push('## Multi-region', '', multiRegion ? multiRegionSection(multiRegion) : 'No multi-region run recorded yet: `npx tsx bench/multi-region.ts`.', '');
  out.push('## Chaos runs', '', chaosSection(chaos), '');
  if (sweeps.length > 0) out.push(sweepSection(sweeps), '');
  if (findings) out.push(findings, '');
  return { markdown: out.join('\n'), svg };
}
