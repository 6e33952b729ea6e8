/**
 * The chaos run's view of its peer processes: which incarnation of each peer runs, since when,
 * whether it is ready, and one HTTP pool per peer for the clients and the observer. Records
 * every peer life (PeerRun) for the history, including a peer that exits by itself.
 */
import { Pool, request } from 'undici';
import type { DataDirUse, RealCluster } from '../test/support/real-cluster.js';
import type { PeerRun } from './history.js';

export interface CallResult {
  status: number | null;
  body: unknown;
  error?: string;
}

/** What one incarnation of a peer logged (the live array of its parsed lines). */
export interface PeerLog {
  peer: string;
  incarnation: number;
  lines: Record<string, unknown>[];
}

export class PeerTable {
  readonly runs: PeerRun[] = [];
  /** Every incarnation's log, in the order they started. */
  readonly logs: PeerLog[] = [];
  private readonly current = new Map<string, PeerRun>();
  private readonly pools = new Map<string, Pool>();
  /** Peers being killed on purpose: their exit is not a crash. */
  private readonly killing = new Set<string>();

  constructor(
    readonly cluster: RealCluster,
    private readonly callTimeoutMs: number,
    /** What the peers found on disk at their first start. */
    firstDataDir: PeerRun['dataDir'],
  ) {
    const nowMs = Date.now();
    for (const id of cluster.ids) {
      this.pools.set(id, new Pool(cluster.url(id), { connections: 16, headersTimeout: callTimeoutMs, bodyTimeout: callTimeoutMs }));
      // RealCluster.start waited until every peer was ready.
      this.track(id, { peer: id, incarnation: 1, startedAtMs: nowMs, readyAtMs: nowMs, endedAtMs: null, endedBy: null, dataDir: firstDataDir });
    }
  }

  get ids(): string[] {
    return this.cluster.ids;
  }

  /** The incarnation running now (or the last one, if the peer is down). */
  incarnation(id: string): number {
    return this.current.get(id)?.incarnation ?? 0;
  }

  isUp(id: string): boolean {
    const run = this.current.get(id);
    return run !== undefined && run.endedAtMs === null;
  }

  isReady(id: string): boolean {
    const run = this.current.get(id);
    return run !== undefined && run.endedAtMs === null && run.readyAtMs !== null;
  }

  /** One JSON call to a peer, bounded by the call timeout; never throws. */
  async call(id: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<CallResult> {
    try {
      const response = await this.pools.get(id)!.request({
        method,
        path,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.callTimeoutMs),
      });
      const text = await response.body.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
      return { status: response.statusCode, body: parsed };
    } catch (error) {
      // A timeout is a DOMException whose code is the number 23: its name (TimeoutError) says more.
      const err = error as { code?: unknown; name?: string; message?: string };
      return { status: null, body: null, error: typeof err.code === 'string' ? err.code : (err.name ?? String(error)) };
    }
  }

  /**
   * SIGKILLs a peer (only a pid this run started) and records the end of its life as the moment
   * the signal was sent: from then on, a call to it may fail through no fault of its own.
   */
  async kill(id: string): Promise<void> {
    this.killing.add(id);
    const run = this.current.get(id);
    if (run && run.endedAtMs === null) {
      run.endedAtMs = Date.now();
      run.endedBy = 'kill';
    }
    await this.cluster.kill(id, 'SIGKILL');
    this.killing.delete(id);
  }

  /** Starts the next incarnation of a peer; readiness is recorded when `/readyz` says so. */
  async restart(id: string, dataDir: DataDirUse): Promise<void> {
    const incarnation = this.incarnation(id) + 1;
    await this.cluster.startPeer(id, [], dataDir);
    const run: PeerRun = { peer: id, incarnation, startedAtMs: Date.now(), readyAtMs: null, endedAtMs: null, endedBy: null, dataDir };
    this.track(id, run);
    void this.watchReady(id, run);
  }

  /** Waits (bounded) until every peer that runs is ready. */
  async waitAllReady(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.ids.every((id) => this.isReady(id))) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }

  /** Records the end of every life still running, then stops the processes and closes the pools. */
  async stop(): Promise<void> {
    const nowMs = Date.now();
    for (const run of this.current.values()) {
      if (run.endedAtMs === null) {
        run.endedAtMs = nowMs;
        run.endedBy = 'stop';
      }
    }
    for (const id of this.ids) this.killing.add(id);
    await this.cluster.stop();
    await Promise.all([...this.pools.values()].map((pool) => pool.close()));
  }

  private track(id: string, run: PeerRun): void {
    this.runs.push(run);
    this.current.set(id, run);
    const peer = this.cluster.peers.get(id);
    if (peer) this.logs.push({ peer: id, incarnation: run.incarnation, lines: peer.logs });
    void peer?.exited.then(() => {
      if (run.endedAtMs !== null || this.killing.has(id)) return;
      run.endedAtMs = Date.now();
      run.endedBy = 'crash';
    });
  }

  private async watchReady(id: string, run: PeerRun): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (run.endedAtMs === null && Date.now() < deadline) {
      try {
        const response = await request(`${this.cluster.url(id)}/readyz`, { signal: AbortSignal.timeout(1_000) });
        await response.body.dump();
        if (response.statusCode === 200) {
          run.readyAtMs = Date.now();
          return;
        }
      } catch {
        // not listening or not ready yet
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
