/**
 * Servers measured in turn on the same GET, 16 requests in flight: the rounds of bench/read-scale.ts
 * (discover against bare servers) and of bench/discover-cpu.ts. A round is one server alone for
 * `roundMs`; every server has one round in each pass, the order reversed every other pass, so
 * that a drift in the machine's load weighs on all of them alike. Bounded in count and time.
 */
import { pool, round, runBounded } from './lib.js';
import { cpuMsOf } from './processes.js';
import { median } from './single-peer.js';

/** What one server did in one round. */
export interface RoundFigures {
  perSecond: number;
  /** The server's CPU per request, in µs, user and system apart. */
  userUs: number;
  systemUs: number;
  /** The share of one core the server used in the round (0.5: busy half the time). */
  busy: number;
}

/** Requests per second of GET `path` on `target`, 16 in flight, for one round of `roundMs`. */
async function oneRound(target: ReturnType<typeof pool>, pid: number, path: string, roundMs: number): Promise<RoundFigures> {
  const before = cpuMsOf(pid);
  const run = await runBounded(10_000_000, 16, roundMs, async () => {
    const response = await target.request({ method: 'GET', path });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(String(response.statusCode));
  });
  const after = cpuMsOf(pid);
  const perRequestUs = (ms: number) => (run.done === 0 ? 0 : (ms * 1_000) / run.done);
  return {
    perSecond: run.done / (run.elapsedMs / 1_000),
    userUs: perRequestUs(after.userMs - before.userMs),
    systemUs: perRequestUs(after.systemMs - before.systemMs),
    busy: (after.userMs - before.userMs + after.systemMs - before.systemMs) / run.elapsedMs,
  };
}

/**
 * `rounds` passes over `servers`, after an untimed warm-up of each (connections, the answer's
 * shared bytes, JIT): for each server, its figures in each pass.
 */
export async function interleavedRounds(servers: { url: string; pid: number }[], path: string, rounds: number, roundMs: number): Promise<RoundFigures[][]> {
  const pools = servers.map((server) => pool(server.url, 16));
  const figures: RoundFigures[][] = servers.map(() => []);
  try {
    for (const [i, target] of pools.entries()) await oneRound(target, servers[i]!.pid, path, 500);
    for (let r = 0; r < rounds; r++) {
      const order = servers.map((_, i) => (r % 2 === 0 ? i : servers.length - 1 - i));
      for (const i of order) figures[i]!.push(await oneRound(pools[i]!, servers[i]!.pid, path, roundMs));
    }
  } finally {
    for (const target of pools) await target.close();
  }
  return figures;
}

/** The median of `ratios` and their range, rounded. */
export function ratioOf(ratios: number[]): { ratio: number; range: [number, number] } {
  return { ratio: round(median(ratios), 2), range: [round(Math.min(...ratios), 2), round(Math.max(...ratios), 2)] };
}
