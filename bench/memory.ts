/**
 * Memory of one peer: resident set size (VmRSS from /proc/<pid>/status) idle and holding
 * 10,000, 50,000 and 100,000 instances with five metadata keys each, loaded over HTTP; the
 * bare fastify reference holds the same instances in a Map in the same run. Target: at most
 * 200 MB at 100,000, and growth linear in the count (a straight line fits the points).
 * `npm run bench` runs it; alone: npm run build && npx tsx bench/memory.ts [--quick]
 */
import { pathToFileURL } from 'node:url';
import { pool, progress, quick, round, runBounded, send, sleep, writeResult } from './lib.js';
import { startPeer, startReference, type ServerProcess } from './processes.js';
import { scaleBody } from './scale-loader.js';

export interface MemoryPoint {
  instances: number;
  peerMb: number;
  referenceMb: number;
}

export interface MemoryResult {
  points: MemoryPoint[];
  /** MB per 10,000 instances over each step between two points (peer). */
  peerMbPer10kByStep: { from: number; to: number; mbPer10k: number }[];
  /** Least-squares line through the loaded points (peer): slope, and how well it fits (R², 1 = on the line). */
  fit: { mbPer10k: number; interceptMb: number; rSquared: number };
  linear: boolean;
  targetMb: number;
  targetInstances: number;
  /**
   * After the last step, every service is listed once on both servers (the peer keeps JSON
   * parts of what it lists, within a byte budget: src/native/instance-json.ts), and RSS is read
   * again: the figure with the instances loaded and read. Absent in results of older runs.
   */
  listed?: MemoryPoint;
  settleMs: number;
}

export const MEMORY_TARGET_MB = 200;
/**
 * A straight line through the loaded points must explain at least this share of their variance
 * for the growth to count as linear. Not a tighter test: RSS moves in steps as the garbage
 * collector grows the heap, so single steps differ even when the cost per instance is flat.
 */
export const LINEARITY_MIN_R_SQUARED = 0.95;
const SETTLE_MS = 3_000;
const SERVICES = 100;

const body = (i: number) => scaleBody(i, SERVICES, 'mem');

/** Least-squares line y = a + b x through the points, and its R². Pure. */
export function linearFit(points: [number, number][]): { mbPer10k: number; interceptMb: number; rSquared: number } {
  const n = points.length;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const [x, y] of points) {
    sxy += (x - meanX) * (y - meanY);
    sxx += (x - meanX) ** 2;
    syy += (y - meanY) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  const rSquared = sxx === 0 || syy === 0 ? 1 : (sxy * sxy) / (sxx * syy);
  return { mbPer10k: round(slope, 2), interceptMb: round(meanY - slope * meanX, 1), rSquared: round(rSquared, 3) };
}

export async function benchMemory(options: { quick: boolean }): Promise<MemoryResult> {
  const steps = options.quick ? [0, 5_000, 10_000, 15_000] : [0, 10_000, 50_000, 100_000];
  const settleMs = options.quick ? 1_500 : SETTLE_MS;
  progress(`memory: RSS of a peer and of the bare reference at ${steps.join(', ')} instances (5 metadata keys each)`);
  const servers: ServerProcess[] = [];
  try {
    // warn: the point is what the records cost, not the log lines of 100,000 registrations.
    const peer = await startPeer('memory-peer', { pinned: false, logLevel: 'warn' });
    const reference = await startReference('memory-reference', { pinned: false });
    servers.push(peer, reference);
    const targets = [pool(peer.url, 32), pool(reference.url, 32)] as const;
    const points: MemoryPoint[] = [];
    let loaded = 0;
    for (const count of steps) {
      for (const target of targets) {
        const run = await runBounded(count - loaded, 32, 180_000, async (n) => {
          const answer = await send(target, { method: 'POST', path: '/v1/instances', body: body(loaded + n) });
          if (answer.status !== 201) throw new Error(`register answered ${answer.status}`);
        });
        if (run.done !== count - loaded) throw new Error(`loaded only ${run.done} of ${count - loaded} (${run.errors} errors)`);
      }
      loaded = count;
      await sleep(settleMs);
      const point = { instances: count, peerMb: round(peer.rssMb(), 1), referenceMb: round(reference.rssMb(), 1) };
      points.push(point);
      progress(`memory at ${count}: peer ${point.peerMb} MB, reference ${point.referenceMb} MB`);
    }
    // Read everything once: what a peer that serves discovery holds, not only one that was written to.
    for (const target of targets) {
      const run = await runBounded(SERVICES, 8, 120_000, async (n) => {
        const answer = await send(target, { method: 'GET', path: `/v1/services/mem-${n}` });
        if (answer.status !== 200) throw new Error(`list answered ${answer.status}`);
      });
      if (run.done !== SERVICES) throw new Error(`listed only ${run.done} of ${SERVICES} services (${run.errors} errors)`);
    }
    await sleep(settleMs);
    const listed = { instances: loaded, peerMb: round(peer.rssMb(), 1), referenceMb: round(reference.rssMb(), 1) };
    progress(`memory at ${loaded}, every service listed once: peer ${listed.peerMb} MB, reference ${listed.referenceMb} MB`);
    for (const target of targets) await target.close();
    const loadedPoints = points.filter((point) => point.instances > 0);
    const peerMbPer10kByStep = loadedPoints.slice(1).map((point, i) => {
      const before = loadedPoints[i]!;
      return { from: before.instances, to: point.instances, mbPer10k: round(((point.peerMb - before.peerMb) / (point.instances - before.instances)) * 10_000, 2) };
    });
    const fit = linearFit(loadedPoints.map((point) => [point.instances / 10_000, point.peerMb]));
    return {
      points,
      peerMbPer10kByStep,
      fit,
      linear: loadedPoints.length >= 3 && fit.rSquared >= LINEARITY_MIN_R_SQUARED,
      targetMb: MEMORY_TARGET_MB,
      targetInstances: 100_000,
      listed,
      settleMs,
    };
  } finally {
    for (const server of servers) await server.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await benchMemory({ quick });
  const last = result.points.at(-1)!;
  console.log(`peer ${last.peerMb} MB at ${last.instances} instances, ${result.listed?.peerMb} MB listed once (reference ${last.referenceMb} / ${result.listed?.referenceMb} MB)`);
  console.log(`results: ${writeResult(quick ? 'memory-quick' : 'memory', result)}`);
}
