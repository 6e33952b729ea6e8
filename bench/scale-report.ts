/** The scale benchmark's figures as markdown (bench/RESULTS.md shows them; the device run writes them to $OUT). Pure. */
import type { ScaleResult } from './scale.js';

const n = (value: number) => value.toLocaleString('en-US');

export function renderScaleMarkdown(result: ScaleResult): string {
  const o = result.options;
  const out: string[] = [
    `Scale run ${result.startedAt}, ${result.durationSeconds} s: ${n(o.instances)} instances in ${n(o.services)} services (five metadata keys each), ${o.cores} of ${result.machine.cpus} CPUs (${result.machine.model}), Node ${result.machine.node}, peer Node flags: ${o.nodeFlags === undefined ? 'not recorded' : o.nodeFlags.length > 0 ? o.nodeFlags.join(' ') : 'none'}${o.listingCacheBytes === undefined ? '' : `, limits.listingCacheMaxBytes ${n(o.listingCacheBytes)}`}; peers on CPUs ${result.layout.peerCores.join(' / ')}, ${result.layout.loaders} load generators on ${result.layout.loaderCores}.`,
    '',
    '| figure | value |',
    '| --- | --- |',
  ];
  const row = (figure: string, value: string) => out.push(`| ${figure} | ${value} |`);
  const p = result.onePeer;
  if ('skipped' in p) row('one peer', `skipped: ${p.skipped}`);
  else {
    row('one peer: RSS idle', `${p.idleRssMb} MB`);
    row('one peer: RSS by instances (heap in use)', p.points.map((point) => `${n(point.instances)}: ${point.rssMb} MB${point.heapUsedMb === undefined ? '' : ` (${point.heapUsedMb} MB)`}`).join('; '));
    row('one peer: bytes per instance (slope of RSS, least squares)', `${n(p.slopeBytesPerInstance)} B (R² ${p.rSquared}); above idle at ${n(o.instances)}: ${n(p.aboveIdleBytesPerInstance)} B${p.heapSlopeBytesPerInstance === undefined ? '' : `; heap in use ${n(p.heapSlopeBytesPerInstance)} B`}`);
    row(`one peer: RSS at the end after ${o.idleSeconds ?? 20} s idle`, `${p.settledRssMb} MB: ${n(p.settledAboveIdleBytesPerInstance)} B per instance above idle`);
    row('one peer: register rate (cold: the first 10,000)', `${n(p.registerPerSecond)}/s (cold ${p.coldRegisterPerSecond === null ? '-' : n(p.coldRegisterPerSecond)}/s), ${p.errors} errors`);
  }
  const j = result.join;
  if ('skipped' in j) row('a new peer joins', `skipped: ${j.skipped}`);
  else {
    row('a new peer joins: ready / lists every instance', `${n(j.readyMs)} ms / ${n(j.allListedMs)} ms`);
    row('a new peer joins: its RSS, the serving peer\'s CPU meanwhile', `${j.newPeerRssMb} MB, ${j.servingPeerCpuSeconds} CPU-s${j.newPeerCpuSeconds === undefined ? '' : ` (the new peer's own: ${j.newPeerCpuSeconds} CPU-s)`}`);
  }
  const c = result.cluster;
  if ('skipped' in c) row('peers with heartbeats', `skipped: ${c.skipped}`);
  else {
    row(`${c.peers} peers: register all / listed on every peer`, `${c.registerSeconds} s / ${n(c.allListedMs)} ms after`);
    row(`${c.peers} peers: heartbeats (every instance every ${o.heartbeatSeconds} s, ${c.heartbeatSeconds} s)`, `${n(c.heartbeatsPerSecond)}/s: p50 ${c.p50Ms} / p99 ${c.p99Ms} / max ${c.maxMs} ms; ${c.errors} errors, ${c.skippedBeats} not sent (in-flight cap)`);
    row(`${c.peers} peers: RSS each`, `${c.rssMb.join(', ')} MB`);
    if (c.points !== undefined && c.idleRssMb !== undefined && c.slopeBytesPerInstance !== undefined) {
      row(`${c.peers} peers: RSS each, idle and by instances (each step heartbeating)`, [`idle: ${c.idleRssMb.join(', ')} MB`, ...c.points.map((point) => `${n(point.instances)}: ${point.rssMb.join(', ')} MB`)].join('; '));
      row(`${c.peers} peers: bytes per instance (slope of each peer's RSS, least squares)`, `${c.slopeBytesPerInstance.map(n).join(', ')} B`);
    }
    if (c.heapSlopes !== undefined) {
      const { committed, used, young } = c.heapSlopes;
      row(`${c.peers} peers: slopes of the V8 heap committed / in use / young generation committed`, `${committed.map(n).join(', ')} / ${used.map(n).join(', ')} / ${young.map(n).join(', ')} B per instance`);
    }
    const h = c.heal;
    if (h !== undefined && 'skipped' in h) row(`${c.peers} peers: heal after a pause`, `skipped: ${h.skipped}`);
    else if (h !== undefined) {
      row(
        `${c.peers} peers: heal after one peer is stopped ${h.pausedSeconds} s (SIGSTOP) while the others take ${n(h.registeredMeanwhile)} registrations`,
        [
          h.pausedPeerAnsweredMs === undefined ? '' : `it answered after ${n(h.pausedPeerAnsweredMs)} ms; `,
          h.seenBackMs?.some((ms) => ms !== null) ? `the others logged it back after ${h.seenBackMs.map((ms) => (ms === null ? '-' : n(ms))).join(' / ')} ms; ` : '',
          h.skippedCalls === undefined ? '' : `${n(h.skippedCalls)} calls abandoned during the pause skipped; `,
          `every digest agreed ${n(h.agreedMs)} ms after it went on; it listed every instance after ${n(h.pausedPeerListedMs)} ms`,
        ].join(''),
      );
    }
  }
  return out.join('\n');
}
