/**
 * The chaos run's clients. Each client plays one instance at a time, the way a service using
 * the native API would: it registers at a home peer (chosen at random), heartbeats it at the
 * interval the register answer gives, and fails over to another random peer when its home
 * stops answering (a 404 there means: register again). Now and then it changes its status or
 * registers again with new metadata, cancels (on a random peer), or stops heartbeating without
 * a word (a crashed instance). Every call is recorded as the client saw it. Instance ids are
 * never reused: a new life gets a new id.
 */
import { randomInt, seededRng, type Rng } from '../src/clock/rng.js';
import type { ClientOp, OpKind } from './history.js';
import type { CallResult, PeerTable } from './peers.js';

export interface WorkloadInit {
  clients: number;
  services: readonly string[];
  /** The lease each instance asks for. */
  leaseDurationMs: number;
  /** Per heartbeat tick: chance of a status change, a re-register, a cancel, an abandon. */
  statusChance: number;
  updateChance: number;
  cancelChance: number;
  abandonChance: number;
}

export const defaultWorkload: Omit<WorkloadInit, 'clients'> = {
  services: ['chaos-a', 'chaos-b', 'chaos-c'],
  leaseDurationMs: 6_000,
  statusChance: 0.04,
  updateChance: 0.02,
  cancelChance: 0.015,
  abandonChance: 0.005,
};

/** What the clients are allowed to do: everything, heartbeats (and re-registers) only, or stop. */
export type WorkloadMode = 'chaos' | 'quiet' | 'stop';

const STATUSES = ['UP', 'DOWN', 'OUT_OF_SERVICE', 'STARTING', 'UP', 'UP'] as const;

export class Workload {
  readonly ops: ClientOp[] = [];
  readonly abandoned: { key: string; atMs: number }[] = [];
  mode: WorkloadMode = 'chaos';
  private readonly running: Promise<void>[] = [];

  /** Seeds each client's own random stream, so that its choices repeat whatever the timing. */
  private readonly seed: number;

  constructor(
    private readonly peers: PeerTable,
    rng: Rng,
    private readonly init: WorkloadInit,
  ) {
    this.seed = Math.floor(rng.next() * 2 ** 31);
  }

  start(): void {
    for (let client = 0; client < this.init.clients; client++) this.running.push(this.runClient(client));
  }

  /** Stops every client and waits for its last call (each is bounded by the call timeout). */
  async stop(): Promise<void> {
    this.mode = 'stop';
    await Promise.all(this.running);
  }

  // Methods rather than inline comparisons: the mode changes while a client awaits.
  private stopping(): boolean {
    return this.mode === 'stop';
  }

  private chaotic(): boolean {
    return this.mode === 'chaos';
  }

  private randomPeer(rng: Rng, except?: string): string {
    const choices = this.peers.ids.filter((id) => id !== except);
    return choices[randomInt(rng, choices.length)]!;
  }

  private async runClient(client: number): Promise<void> {
    const rng = seededRng(this.seed + 7_919 * client);
    // Spread the clients' starts over a second so their heartbeats do not all line up.
    await sleep(randomInt(rng, 1_000));
    for (let life = 0; this.chaotic(); life++) {
      const service = this.init.services[randomInt(rng, this.init.services.length)]!;
      await this.live(`${service}/c${client}-${life}`, client, rng);
      if (this.chaotic()) await sleep(200 + randomInt(rng, 800));
    }
  }

  /** One life of one instance, until it is cancelled or abandoned, or the run stops. */
  private async live(key: string, client: number, rng: Rng): Promise<void> {
    const [service, instanceId] = key.split('/') as [string, string];
    const instancePath = `/v1/services/${service}/instances/${instanceId}`;
    let metadataVersion = 0;
    const body = () => ({
      service,
      instanceId,
      host: '127.0.0.1',
      port: 10_000 + client,
      leaseDurationMs: this.init.leaseDurationMs,
      metadata: { client: String(client), rev: String(metadataVersion) },
    });
    let home = this.randomPeer(rng);
    let intervalMs = 1_000;
    // Register, failing over until a peer acknowledges (bounded by the run).
    for (;;) {
      if (this.stopping()) return;
      const answer = await this.call('register', key, home, 'POST', '/v1/instances', body(), { leaseDurationMs: this.init.leaseDurationMs });
      if (answer.outcome === 'ok') {
        intervalMs = heartbeatInterval(answer.result, intervalMs);
        break;
      }
      home = this.randomPeer(rng, home);
      await sleep(100);
    }
    while (!this.stopping()) {
      await sleep(intervalMs);
      if (this.stopping()) return;
      if (this.chaotic()) {
        const roll = rng.next();
        const { statusChance, updateChance, cancelChance, abandonChance } = this.init;
        if (roll < cancelChance) return this.cancel(key, instancePath, home, rng);
        if (roll < cancelChance + abandonChance) {
          this.abandoned.push({ key, atMs: Date.now() });
          return;
        }
        if (roll < cancelChance + abandonChance + statusChance) {
          const status = STATUSES[randomInt(rng, STATUSES.length)]!;
          await this.call('status', key, this.randomPeer(rng), 'PUT', `${instancePath}/status`, { status }, { status });
        } else if (roll < cancelChance + abandonChance + statusChance + updateChance) {
          metadataVersion += 1;
          await this.call('register', key, home, 'POST', '/v1/instances', body(), { leaseDurationMs: this.init.leaseDurationMs });
          continue;
        }
      }
      // Heartbeat the home; on failure fail over at once; on 404 register again where we are.
      for (let attempt = 0; attempt < this.peers.ids.length * 2 && !this.stopping(); attempt++) {
        const beat = await this.call('heartbeat', key, home, 'PUT', `${instancePath}/heartbeat`);
        if (beat.outcome === 'ok') {
          intervalMs = heartbeatInterval(beat.result, intervalMs);
          break;
        }
        if (beat.outcome === 'not-found') {
          const again = await this.call('register', key, home, 'POST', '/v1/instances', body(), { leaseDurationMs: this.init.leaseDurationMs });
          if (again.outcome === 'ok') break;
        }
        home = this.randomPeer(rng, home);
      }
    }
  }

  /** Cancels on a random peer; a 404 there sends it to the home, a failure to another peer. */
  private async cancel(key: string, instancePath: string, home: string, rng: Rng): Promise<void> {
    let peer = this.randomPeer(rng);
    for (let attempt = 0; attempt < this.peers.ids.length + 1 && !this.stopping(); attempt++) {
      const answer = await this.call('cancel', key, peer, 'DELETE', instancePath);
      if (answer.outcome === 'ok') return;
      peer = answer.outcome === 'not-found' && peer !== home ? home : this.randomPeer(rng, peer);
    }
  }

  private async call(
    kind: OpKind,
    key: string,
    peer: string,
    method: 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
    extra: Partial<ClientOp> = {},
  ): Promise<{ outcome: ClientOp['outcome']; result: CallResult }> {
    const incarnation = this.peers.incarnation(peer);
    const sentAtMs = Date.now();
    const result = await this.peers.call(peer, method, path, body);
    const doneAtMs = Date.now();
    const outcome: ClientOp['outcome'] =
      result.status !== null && result.status >= 200 && result.status < 300 ? 'ok' : result.status === 404 ? 'not-found' : 'failed';
    const version = (result.body as { version?: unknown } | null)?.version;
    this.ops.push({
      kind,
      key,
      peer,
      incarnation,
      sentAtMs,
      doneAtMs,
      outcome,
      ...(result.status === null ? {} : { httpStatus: result.status }),
      ...(result.error === undefined ? {} : { error: result.error }),
      ...(outcome === 'ok' && typeof version === 'string' && kind !== 'heartbeat' ? { version } : {}),
      ...extra,
    });
    return { outcome, result };
  }
}

/** The interval a register or heartbeat answer asks for (the last one known otherwise). */
function heartbeatInterval(result: CallResult, fallbackMs: number): number {
  const value = (result.body as { heartbeatIntervalMs?: unknown } | null)?.heartbeatIntervalMs;
  return typeof value === 'number' && value > 0 ? value : fallbackMs;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
