import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { FaultProxy, freePort, type ProxyMode } from './fault-proxy.js';
import { startPeerProcess, waitFor, type PeerProcess } from './process.js';

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
}

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
      await Promise.all(cluster.ids.map((id) => cluster.startPeer(id)));
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

  /** Starts (or restarts) one peer process with its own cluster file. */
  async startPeer(id: string, extraArgs: string[] = []): Promise<PeerProcess> {
    const peer = await startPeerProcess([
      '--config',
      join(this.dir, `${id}.json`),
      '--id',
      id,
      '--log-level',
      'info',
      ...(this.options.args ?? []),
      ...extraArgs,
    ], {}, this.url(id));
    this.peers.set(id, peer);
    return peer;
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

  heal(): void {
    for (const proxy of this.proxies.values()) {
      proxy.set('pass');
      proxy.delayMs = 0;
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.peers.keys()].map((id) => this.kill(id)));
    await Promise.all([...this.proxies.values()].map((proxy) => proxy.close()));
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  private async setUp(): Promise<void> {
    this.dir = await mkdtemp(join(tmpdir(), 'registry-cluster-'));
    for (const id of this.ids) this.ports.set(id, await freePort());
    for (const from of this.ids) {
      for (const to of this.ids) {
        if (from !== to) this.proxies.set(`${from}->${to}`, await FaultProxy.start(this.ports.get(to)!));
      }
    }
    for (const self of this.ids) {
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
}
