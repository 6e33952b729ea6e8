import type { Clock } from '../../src/clock/clock.js';
import { seededRng, type Rng } from '../../src/clock/rng.js';
import { resolveConfig } from '../../src/config/load.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import { RegistryNode } from '../../src/node.js';
import type { RegistrationInput } from '../../src/registry/validate.js';
import { FakeClock } from './fake-clock.js';
import { SimDisk } from './sim-disk.js';
import { SimNetwork } from './sim-network.js';

/** A clock that reads `skewMs` off the shared virtual time (a peer whose clock is wrong). */
export function skewedClock(base: Clock, skewMs: number): Clock {
  return {
    nowMs: () => base.nowMs() + skewMs,
    setTimeout: (fn, delayMs) => base.setTimeout(fn, delayMs),
    setInterval: (fn, periodMs) => base.setInterval(fn, periodMs),
  };
}

export interface ClusterOptions {
  size: number;
  seed?: number;
  /** Clock skew of each peer, in ms (default 0 for all). */
  skewsMs?: number[];
  /** Settings of the `cluster` object (on top of the lan profile). */
  cluster?: Record<string, unknown>;
  latencyMs?: number;
  /** Region of each peer (default `sim` for all). */
  regions?: string[];
  logger?: Logger;
  /** Gives every peer a data dir of its own on a simulated disk, kept across its restarts. */
  dataDirs?: boolean;
}

export function peerIds(size: number): string[] {
  return Array.from({ length: size }, (_, i) => `peer-${String.fromCharCode(97 + i)}`);
}

/** An instance to register in tests. */
export function instance(instanceId: string, overrides: Partial<RegistrationInput> = {}): RegistrationInput {
  return {
    namespace: 'default',
    service: 'orders',
    instanceId,
    data: { host: '10.0.0.1', port: 8080, securePort: null, status: 'UP', weight: 1, zone: '', metadata: {} },
    leaseDurationMs: 30_000,
    ...overrides,
  };
}

/**
 * A whole cluster in one process: every peer is a real RegistryNode (production merge,
 * replication, anti-entropy, membership and lease code) on one fake clock, talking through a
 * simulated network. The seed drives every random choice; tests print it on failure.
 */
export class TestCluster {
  readonly clock = new FakeClock();
  readonly rng: Rng;
  readonly network: SimNetwork;
  readonly ids: string[];
  readonly nodes = new Map<string, RegistryNode>();
  /** Each peer's simulated disk (with `dataDirs`). */
  readonly disks = new Map<string, SimDisk>();
  /** The cluster file every peer is built from (a test may start a peer from a changed copy). */
  readonly file: { cluster: Record<string, unknown>; peers: Array<{ id: string; url: string; region: string; zone: string }> };
  private nodeSeq = 0;

  constructor(readonly options: ClusterOptions) {
    this.rng = seededRng(options.seed ?? 1);
    this.network = new SimNetwork(this.clock, this.rng, options.latencyMs ?? 1);
    this.ids = peerIds(options.size);
    this.file = {
      cluster: { name: 'sim', ...options.cluster },
      peers: this.ids.map((id, i) => ({ id, url: `http://${id}.sim:${8761 + i}`, region: this.regionOf(i), zone: `z${i}` })),
    };
    for (const [i, id] of this.ids.entries()) this.network.regions.set(id, this.regionOf(i));
    for (const id of this.ids) this.build(id);
  }

  regionOf(index: number): string {
    return this.options.regions?.[index] ?? 'sim';
  }

  node(id: string): RegistryNode {
    const node = this.nodes.get(id);
    if (!node) throw new Error(`no running peer ${id}`);
    return node;
  }

  /** Starts every peer at once (each syncs from whoever answers). */
  async start(): Promise<void> {
    await this.whileAdvancing(Promise.all([...this.nodes.values()].map((node) => node.start())));
  }

  /** Kills a peer: no goodbye, its memory is gone, calls to it are refused. */
  crash(id: string): void {
    const node = this.node(id);
    this.network.detach(id);
    this.nodes.delete(id);
    void node.stop();
  }

  /** Starts a fresh peer (empty memory) with the id of one that crashed; resolves when it is ready. */
  async restart(id: string, file: Record<string, unknown> = this.file): Promise<RegistryNode> {
    const { node, started } = this.launch(id, file);
    await this.whileAdvancing(started);
    return node;
  }

  /**
   * Starts a fresh peer with the id of one that crashed or stopped (with `dataDirs`, on its
   * disk), without moving time: `started` resolves once it is ready, as time is advanced.
   * For peers that start while others are starting.
   */
  launch(id: string, file: Record<string, unknown> = this.file): { node: RegistryNode; started: Promise<void> } {
    const node = this.build(id, file);
    return { node, started: node.start() };
  }

  /** Advances virtual time in small steps until `work` settles (start-up syncs need the network). */
  async whileAdvancing<T>(work: Promise<T>, maxMs = 120_000): Promise<T> {
    let done = false;
    const tracked = work.finally(() => {
      done = true;
    });
    await this.clock.advanceUntil(() => done, maxMs, 5);
    return tracked;
  }

  /** Moves virtual time forward. */
  advance(ms: number): Promise<void> {
    return this.clock.advance(ms);
  }

  /** True when every running peer holds exactly the same records (same digest). */
  converged(): boolean {
    const roots = new Set([...this.nodes.values()].map((node) => node.store.digest.rootHash()));
    return roots.size === 1;
  }

  /** Stops every peer. */
  async stop(): Promise<void> {
    // Calls in flight end by their (virtual) timeouts, so time must move while peers stop.
    await this.whileAdvancing(Promise.all([...this.nodes.values()].map((node) => node.stop())));
  }

  private build(id: string, file: Record<string, unknown> = this.file): RegistryNode {
    const index = Math.max(0, this.ids.indexOf(id));
    const skewMs = this.options.skewsMs?.[index] ?? 0;
    const seq = this.nodeSeq++;
    const durable = this.options.dataDirs === true;
    if (durable && !this.disks.has(id)) this.disks.set(id, new SimDisk(() => this.clock.nowMs()));
    const node = new RegistryNode(
      {
        clock: skewMs === 0 ? this.clock : skewedClock(this.clock, skewMs),
        rng: seededRng((this.options.seed ?? 1) * 1_000 + seq),
        logger: this.options.logger ?? silentLogger,
        transport: this.network.transportFor(id),
        // Each build plays a new process (its own lock identity) on the peer's own disk.
        ...(durable ? { disk: this.disks.get(id)!, processIdentity: { pid: 2_000_000 + seq, hostname: 'sim', processStartedAtMs: seq } } : {}),
      },
      resolveConfig(durable ? { ...file, dataDir: '/data' } : file, {}, { id }),
    );
    this.nodes.set(id, node);
    this.network.attach(id, node.peerApi);
    return node;
  }
}
