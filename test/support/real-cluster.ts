import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { seededRng } from '../../src/clock/rng.js';
import { FaultProxy, freePort, type ProxyMode } from './fault-proxy.js';
import { callJson } from './http.js';
import { PeerStartError, startPeerProcess, waitFor, type PeerProcess } from './process.js';

export interface RealClusterOptions {
  size: number;
  /** Extra `cluster` settings for every peer. */
  cluster?: Record<string, unknown>;
  /** Extra flags for every peer. */
  args?: string[];
  /** Region of each peer (default `local` for all). */
  regions?: string[];
  /** More top-level fields of every peer's file (`security`, `limits`...). */
  file?: Record<string, unknown>;
  /** Give every peer a data dir of its own (`--data-dir`), kept across restarts unless wiped. */
  dataDirs?: boolean;
  /** Seeds the proxies' random drops (each link gets its own stream). */
  seed?: number;
  /** Where the peers' ports come from (default `freePort`); a test of this class hands out taken ones. */
  pickPort?: () => Promise<number>;
  /**
   * Start the peers one after another instead of all at once: on a loaded machine each then
   * gets the CPU it needs to listen within the start wait (the chaos runs use it).
   */
  startOneByOne?: boolean;
}

/**
 * How many ports one peer start tries. A port is picked before the peer listens on it, and in
 * between any outgoing connection on the machine may take it as its local port: the peer
 * then exits with EADDRINUSE and starts again on a new port.
 */
const START_ATTEMPTS = 3;

/** What a (re)started peer finds in its data dir: what it left there, an empty one, or none at all. */
export type DataDirUse = 'keep' | 'wipe' | 'none';

/**
 * Real peer processes on 127.0.0.1, wired through one fault proxy per directed link (peer X
 * reaches peer Y only through proxy X->Y), so a test can cut, black-hole, delay or flap any
 * link in either direction. Clients talk to each peer directly.
 */
export class RealCluster {
  readonly ids: string[];
  readonly ports = new Map<string, number>();
  readonly proxies = new Map<string, FaultProxy>();
  readonly peers = new Map<string, PeerProcess>();
  private dir = '';

  private constructor(readonly options: RealClusterOptions) {
    this.ids = Array.from({ length: options.size }, (_, i) => `peer-${String.fromCharCode(97 + i)}`);
  }

  static async start(options: RealClusterOptions): Promise<RealCluster> {
    const cluster = new RealCluster(options);
    try {
      await cluster.setUp();
      if (options.startOneByOne) {
        for (const id of cluster.ids) await cluster.startPeer(id);
      } else {
        // Every start is waited for, so that when one fails none is left running unknown to stop().
        const starts = await Promise.allSettled(cluster.ids.map((id) => cluster.startPeer(id)));
        const failed = starts.find((start) => start.status === 'rejected');
        if (failed) throw failed.reason;
      }
      await Promise.all(cluster.ids.map((id) => cluster.waitReady(id)));
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** The client URL of a peer (no proxy in between). */
  url(id: string): string {
    return `http://127.0.0.1:${this.ports.get(id)}`;
  }

  regionOf(id: string): string {
    return this.options.regions?.[this.ids.indexOf(id)] ?? 'local';
  }

  proxy(from: string, to: string): FaultProxy {
    return this.proxies.get(`${from}->${to}`)!;
  }

  /** The data dir of a peer (used when the cluster has `dataDirs`, or a start asks for one). */
  dataDir(id: string): string {
    return join(this.dir, `${id}-data`);
  }

  /**
   * Starts (or restarts) one peer process with its own cluster file. `dataDir` says what it
   * finds on disk: `keep` (the default when the cluster has `dataDirs`) what it left there,
   * `wipe` an empty data dir (a peer that lost its disk), `none` no `--data-dir` at all.
   *
   * When its port was taken meanwhile, the peer moves to a new one (up to START_ATTEMPTS
   * ports; any other failure is thrown at once): read `url(id)` again after a (re)start.
   */
  async startPeer(id: string, extraArgs: string[] = [], dataDir?: DataDirUse): Promise<PeerProcess> {
    const use = dataDir ?? (this.options.dataDirs ? 'keep' : 'none');
    if (use === 'wipe') await rm(this.dataDir(id), { recursive: true, force: true });
    if (use !== 'none') await mkdir(this.dataDir(id), { recursive: true });
    const args = [
      '--config',
      join(this.dir, `${id}.json`),
      '--id',
      id,
      '--log-level',
      'info',
      ...(use === 'none' ? [] : ['--data-dir', this.dataDir(id)]),
      ...(this.options.args ?? []),
      ...extraArgs,
    ];
    const taken: number[] = [];
    for (;;) {
      try {
        const peer = await startPeerProcess(args, {}, this.url(id));
        this.peers.set(id, peer);
        return peer;
      } catch (error) {
        if (!(error instanceof PeerStartError && error.addressInUse)) throw error;
        taken.push(this.ports.get(id)!);
        if (taken.length >= START_ATTEMPTS) {
          throw new Error(`${id} found each of ${taken.length} ports taken (${taken.join(', ')}); last: ${error.message}`, { cause: error });
        }
        await this.movePeer(id, await this.pickPort());
      }
    }
  }

  async waitReady(id: string, timeoutMs = 20_000): Promise<void> {
    await waitFor(async () => {
      try {
        const response = await request(`${this.url(id)}/readyz`);
        await response.body.dump();
        return response.statusCode === 200;
      } catch {
        return false;
      }
    }, timeoutMs, `${id} to be ready`);
  }

  /**
   * Peer `id`'s `/v1/cluster` answer once it shows every other peer up: one slow probe on a
   * loaded machine can show a peer suspect for a moment, so the state is waited for, not read
   * once. `headers` for a peer that wants a token.
   */
  async statusWithAllUp(id: string, headers: Record<string, string> = {}, timeoutMs = 15_000): Promise<Record<string, any>> {
    return waitFor(async () => {
      const { body } = await callJson('GET', `${this.url(id)}/v1/cluster`, undefined, headers);
      return (body.peers as { state: string }[]).every((peer) => peer.state === 'up') && body;
    }, timeoutMs, `${id} to see every other peer up`);
  }

  /** Kills one peer process (only ever a pid this test started). */
  async kill(id: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const peer = this.peers.get(id);
    if (!peer) return;
    peer.kill(signal);
    await peer.exited;
    this.peers.delete(id);
  }

  /** Sets every link between the two groups, both ways, to `mode`. */
  partition(groupA: string[], groupB: string[], mode: ProxyMode = 'blackhole'): void {
    for (const a of groupA) {
      for (const b of groupB) {
        this.proxy(a, b).set(mode);
        this.proxy(b, a).set(mode);
      }
    }
  }

  /** Every link back to a clean pass: no cut, delay, drops or flapping. */
  heal(): void {
    for (const proxy of this.proxies.values()) proxy.reset();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.peers.keys()].map((id) => this.kill(id)));
    await Promise.all([...this.proxies.values()].map((proxy) => proxy.close()));
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  /**
   * Gives a peer a new port: its own file (where it listens) and every proxy that leads to it.
   * The other peers' files name only the proxies, so they stay as they are.
   */
  private async movePeer(id: string, port: number): Promise<void> {
    this.ports.set(id, port);
    await this.writePeerFile(id);
    for (const from of this.ids) if (from !== id) this.proxy(from, id).retarget(port);
  }

  private pickPort(): Promise<number> {
    return (this.options.pickPort ?? freePort)();
  }

  private async setUp(): Promise<void> {
    this.dir = await mkdtemp(join(tmpdir(), 'registry-cluster-'));
    for (const id of this.ids) this.ports.set(id, await this.pickPort());
    let link = 0;
    for (const from of this.ids) {
      for (const to of this.ids) {
        if (from === to) continue;
        const rng = seededRng((this.options.seed ?? 0x5eed) + 7_919 * link++);
        this.proxies.set(`${from}->${to}`, await FaultProxy.start(this.ports.get(to)!, { rng }));
      }
    }
    for (const self of this.ids) await this.writePeerFile(self);
  }

  /** The cluster file of one peer: itself at its own port, every other peer through the proxy self->other. */
  private async writePeerFile(self: string): Promise<void> {
    const file = {
      ...this.options.file,
      cluster: { name: 'e2e', profile: 'local', ...this.options.cluster },
      peers: this.ids.map((id, i) => ({
        id,
        url: id === self ? this.url(id) : this.proxy(self, id).url,
        region: this.regionOf(id),
        zone: `z${i}`,
      })),
    };
    await writeFile(join(this.dir, `${self}.json`), JSON.stringify(file, null, 2));
  }
}
