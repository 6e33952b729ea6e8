/**
 * The faults of a chaos run, on two independent lanes so that they combine:
 * - the network lane cuts, black-holes, delays, drops or flaps links between peers (through
 *   the fault proxies, one per directed link), for a few seconds at a time, then heals;
 * - the process lane SIGKILLs one peer at a time and restarts it, at once (a bounce, before the
 *   others notice) or once the others hold it down, with its data dir or without one.
 * Faults of the two lanes overlap (a kill during a partition) unless `overlap` is off, which
 * runs one fault at a time. Every choice comes from the seeded Rng; every fault is recorded
 * as an interval.
 */
import { randomInt, seededRng, shuffled, type Rng } from '../src/clock/rng.js';
import type { ProxyMode } from '../test/support/fault-proxy.js';
import type { DataDirUse } from '../test/support/real-cluster.js';
import type { FaultInterval, FaultKind } from './history.js';
import type { PeerTable } from './peers.js';

/** Starts of a killed peer tried before the run gives up (see Nemesis.restart). */
const RESTART_ATTEMPTS = 3;

export interface NemesisInit {
  /** How peers restart after a kill: with their data dir, without, or either at random. */
  restarts: 'with' | 'without' | 'both';
  /** The peers run with data dirs: a restart "without" then means with an emptied one (a lost disk). */
  dataDirs: boolean;
  /**
   * When a killed peer comes back: `bounce` before the others can notice (0.5-2 s, within the
   * failure detector's time), `detected` only once every other running peer holds it down and
   * the clients that failed over had a heartbeat to take their instances over, or either at
   * random (`both`); `none` kills no peer (network faults only).
   */
  kills: KillMode;
  /** Faults of the two lanes may overlap (a kill during a partition); otherwise one at a time. */
  overlap: boolean;
  /** Fault lengths (ms). */
  faultMinMs: number;
  faultMaxMs: number;
  /** Quiet time between two faults of one lane (ms). */
  gapMinMs: number;
  gapMaxMs: number;
  log: (line: string) => void;
}

export const defaultNemesis: Omit<NemesisInit, 'restarts' | 'dataDirs' | 'kills' | 'overlap' | 'log'> = {
  faultMinMs: 3_000,
  faultMaxMs: 9_000,
  gapMinMs: 1_000,
  gapMaxMs: 4_000,
};

export type KillMode = 'bounce' | 'detected' | 'both' | 'none';

const NETWORK_FAULTS: FaultKind[] = ['partition', 'partition', 'partition', 'one-way', 'delay', 'drop', 'flap'];

export class Nemesis {
  readonly faults: FaultInterval[] = [];
  private stopped = false;
  private lanes: Promise<void>[] = [];
  private readonly sleeping = new Set<() => void>();
  /** Held by the lane injecting a fault when faults may not overlap. */
  private turn: Promise<void> = Promise.resolve();

  /** One random stream per lane, so that each lane's choices repeat whatever the timing. */
  private readonly networkRng: Rng;
  private readonly processRng: Rng;

  constructor(
    private readonly peers: PeerTable,
    rng: Rng,
    private readonly init: NemesisInit,
  ) {
    this.networkRng = seededRng(Math.floor(rng.next() * 2 ** 32));
    this.processRng = seededRng(Math.floor(rng.next() * 2 ** 32));
  }

  start(): void {
    this.lanes = this.init.kills === 'none' ? [this.networkLane()] : [this.networkLane(), this.processLane()];
  }

  /** Stops injecting: the fault under way is healed (and a killed peer restarted) at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of this.sleeping) wake();
    await Promise.all(this.lanes);
  }

  /** Runs one fault from injection to heal; alone, when faults may not overlap. */
  private async exclusive(fault: () => Promise<void>): Promise<void> {
    if (this.init.overlap) return fault();
    const previous = this.turn;
    let release = () => {};
    this.turn = new Promise((resolve) => (release = resolve));
    await previous;
    try {
      if (!this.stopped) await fault();
    } finally {
      release();
    }
  }

  private between(rng: Rng, minMs: number, maxMs: number): number {
    return minMs + randomInt(rng, maxMs - minMs + 1);
  }

  private async networkLane(): Promise<void> {
    while (!this.stopped) {
      await this.pause(this.between(this.networkRng, this.init.gapMinMs, this.init.gapMaxMs));
      if (this.stopped) return;
      const kind = NETWORK_FAULTS[randomInt(this.networkRng, NETWORK_FAULTS.length)]!;
      const lengthMs = this.between(this.networkRng, this.init.faultMinMs, this.init.faultMaxMs);
      await this.exclusive(async () => {
        const fault = this.injectNetwork(kind);
        this.init.log(`fault: ${kind} ${fault.sides ? fault.sides.map((s) => `[${s.join(' ')}]`).join(' | ') : (fault.links ?? []).join(' ')} (${fault.detail})`);
        await this.pause(lengthMs);
        this.peers.cluster.heal();
        fault.endedAtMs = Date.now();
        this.faults.push(fault);
        this.init.log(`heal: ${kind}`);
      });
    }
  }

  private injectNetwork(kind: FaultKind): FaultInterval {
    const { cluster } = this.peers;
    const ids = shuffled(this.networkRng, cluster.ids);
    const startedAtMs = Date.now();
    if (kind === 'partition') {
      const cut = 1 + randomInt(this.networkRng, ids.length - 1);
      const sides = [ids.slice(0, cut).sort(), ids.slice(cut).sort()];
      const mode: ProxyMode = this.networkRng.next() < 0.7 ? 'blackhole' : 'reset';
      cluster.partition(sides[0]!, sides[1]!, mode);
      return { kind, startedAtMs, endedAtMs: startedAtMs, sides, detail: mode };
    }
    if (kind === 'one-way') {
      // One peer's calls to the others are lost (or their answers are): the others still reach it.
      const from = ids[0]!;
      const mode: ProxyMode = this.networkRng.next() < 0.5 ? 'blackhole' : 'drop-replies';
      const links = ids.slice(1).map((to) => `${from}->${to}`);
      for (const to of ids.slice(1)) cluster.proxy(from, to).set(mode);
      return { kind, startedAtMs, endedAtMs: startedAtMs, links, detail: mode };
    }
    const links = this.randomLinks(ids);
    if (kind === 'delay') {
      const delayMs = this.between(this.networkRng, 50, 400);
      for (const link of links) this.proxyOf(link).delayMs = delayMs;
      return { kind, startedAtMs, endedAtMs: startedAtMs, links, detail: `${delayMs} ms` };
    }
    if (kind === 'drop') {
      const ratio = Math.round((0.1 + 0.4 * this.networkRng.next()) * 100) / 100;
      for (const link of links) this.proxyOf(link).dropRatio = ratio;
      return { kind, startedAtMs, endedAtMs: startedAtMs, links, detail: `${Math.round(ratio * 100)}% of chunks cut the connection` };
    }
    const periodMs = this.between(this.networkRng, 200, 800);
    for (const link of links) this.proxyOf(link).flap('blackhole', periodMs, 1_000);
    return { kind, startedAtMs, endedAtMs: startedAtMs, links, detail: `blackhole/pass every ${periodMs} ms` };
  }

  /** One to three random directed links. */
  private randomLinks(ids: string[]): string[] {
    const all: string[] = [];
    for (const from of ids) for (const to of ids) if (from !== to) all.push(`${from}->${to}`);
    return shuffled(this.networkRng, all).slice(0, 1 + randomInt(this.networkRng, 3)).sort();
  }

  private proxyOf(link: string) {
    const [from, to] = link.split('->') as [string, string];
    return this.peers.cluster.proxy(from, to);
  }

  private async processLane(): Promise<void> {
    while (!this.stopped) {
      await this.pause(this.between(this.processRng, this.init.gapMinMs * 2, this.init.gapMaxMs * 2));
      if (this.stopped) return;
      const id = this.peers.ids[randomInt(this.processRng, this.peers.ids.length)]!;
      const keep = this.init.restarts === 'with' || (this.init.restarts === 'both' && this.processRng.next() < 0.5);
      const dataDir: DataDirUse = keep ? 'keep' : this.init.dataDirs ? 'wipe' : 'none';
      const bounce = this.init.kills === 'bounce' || (this.init.kills === 'both' && this.processRng.next() < 0.5);
      const bounceMs = this.between(this.processRng, 500, 2_000);
      await this.exclusive(async () => {
        const startedAtMs = Date.now();
        this.init.log(`fault: kill ${id} (${bounce ? 'bounce' : 'restart once detected'})`);
        await this.peers.kill(id);
        if (bounce) await this.pause(bounceMs);
        else await this.untilDetected(id);
        await this.restart(id, dataDir);
        const detail = `${bounce ? 'bounced' : 'restarted once the others held it down'}, ${{ keep: 'with its data dir', wipe: 'with an emptied data dir', none: 'without a data dir' }[dataDir]}`;
        this.faults.push({ kind: 'kill', startedAtMs, endedAtMs: Date.now(), peer: id, detail });
        this.init.log(`restart: ${id} (${detail})`);
      });
    }
  }

  /**
   * Restarts a killed peer. On a machine so loaded that the process does not listen within the
   * harness's wait (20 s), that start is abandoned (the harness kills it) and tried again: the
   * peer is only down longer, which the checker judges like any other down time.
   */
  private async restart(id: string, dataDir: DataDirUse): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.peers.restart(id, dataDir);
      } catch (error) {
        const message = (error as Error).message;
        if (attempt >= RESTART_ATTEMPTS || !message.includes('waiting for the peer to start')) throw error;
        this.init.log(`restart: ${id} did not start (${message}); trying again (attempt ${attempt + 1} of ${RESTART_ATTEMPTS})`);
      }
    }
  }

  /**
   * Waits (at most 20 s) until every other running peer holds `id` down, then 1.5 s more: a
   * client that failed over heartbeats its new peer within a second, which then takes its
   * instance over. Then a little more at random.
   */
  private async untilDetected(id: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (!this.stopped && Date.now() < deadline) {
      const others = this.peers.ids.filter((other) => other !== id && this.peers.isUp(other));
      const views = await Promise.all(others.map((other) => this.peers.call(other, 'GET', '/v1/cluster')));
      const down = views.every((view) => {
        const peers = (view.body as { peers?: { id: string; state: string }[] } | null)?.peers;
        return view.status === 200 && peers?.some((peer) => peer.id === id && peer.state === 'down') === true;
      });
      if (down) break;
      await this.pause(100);
    }
    await this.pause(1_500 + randomInt(this.processRng, 2_000));
  }

  /** Sleeps, unless the nemesis is stopped meanwhile. */
  private pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleeping.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleeping.add(wake);
    });
  }
}
