import { gzipSync } from 'node:zlib';
import { sleep, type Clock } from '../../src/clock/clock.js';
import type { Rng } from '../../src/clock/rng.js';
import { RegistryError } from '../../src/errors.js';
import {
  classifyFailure,
  PeerCallError,
  requestJson,
  type CallOptions,
  type PeerApi,
  type PeerDescriptor,
  type PeerMethod,
  type PeerTransport,
  type StreamOptions,
} from '../../src/transport/transport.js';

export interface LinkStats {
  messages: number;
  bytes: number;
}

/**
 * A network between peers in one process, on a fake clock: every call is serialised (JSON,
 * as on the wire), delayed, and subject to the faults a test sets: symmetric partitions,
 * one-way cuts, random loss, per-link latency and jitter (which reorders messages), and
 * crashed peers (connection refused). A lost request or answer shows as a timeout, as it
 * would over TCP. All randomness comes from the seeded Rng.
 */
export class SimNetwork {
  private readonly apis = new Map<string, PeerApi>();
  private readonly cuts = new Set<string>();
  private readonly latency = new Map<string, number>();
  private readonly linkStats = new Map<string, LinkStats>();
  lossRatio = 0;
  jitterMs = 0;
  /** Region of each peer: messages between regions are counted at their gzip size, as the HTTP transport sends them. */
  readonly regions = new Map<string, string>();
  compressMinBytes = 1_024;

  constructor(
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly defaultLatencyMs = 1,
  ) {}

  /** A peer is reachable from now on. */
  attach(peerId: string, api: PeerApi): void {
    this.apis.set(peerId, api);
  }

  /** A peer crashed: calls to it are refused. */
  detach(peerId: string): void {
    this.apis.delete(peerId);
  }

  /** The transport a peer uses to call the others. */
  transportFor(fromId: string): PeerTransport {
    return {
      call: (peer, method, body, options) => this.call(fromId, peer, method, body, options),
      streamSnapshot: (peer, body, options) => this.stream(fromId, peer, body, options),
      trafficByPeer: () => {
        const out: Record<string, { calls: number; bytesSent: number; bytesReceived: number }> = {};
        for (const to of this.apis.keys()) {
          if (to === fromId) continue;
          const sent = this.stats(fromId, to);
          out[to] = { calls: sent.messages, bytesSent: sent.bytes, bytesReceived: this.stats(to, fromId).bytes };
        }
        return out;
      },
    };
  }

  /** Cuts every link between the groups (both ways); links inside a group stay. */
  partition(...groups: string[][]): void {
    for (const a of groups) {
      for (const b of groups) {
        if (a === b) continue;
        for (const from of a) for (const to of b) this.cuts.add(link(from, to));
      }
    }
  }

  /** Cuts one direction only: nothing sent from `from` reaches `to` (answers included). */
  cutOneWay(from: string, to: string): void {
    this.cuts.add(link(from, to));
  }

  /** Restores one direction cut by `cutOneWay` or `partition`. */
  restoreOneWay(from: string, to: string): void {
    this.cuts.delete(link(from, to));
  }

  /** Restores every link. */
  heal(): void {
    this.cuts.clear();
  }

  setLatency(from: string, to: string, latencyMs: number): void {
    this.latency.set(link(from, to), latencyMs);
  }

  /** Messages and bytes sent from one peer to another so far. */
  stats(from: string, to: string): LinkStats {
    return { ...(this.linkStats.get(link(from, to)) ?? { messages: 0, bytes: 0 }) };
  }

  resetStats(): void {
    this.linkStats.clear();
  }

  private call(fromId: string, peer: PeerDescriptor, method: PeerMethod, body: unknown, options: CallOptions): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (action: () => void) => {
        if (settled) return;
        settled = true;
        timeout.cancel();
        action();
      };
      const timeout = this.clock.setTimeout(
        () => finish(() => reject(new PeerCallError(`${method} to ${peer.id} timed out`, 'transient'))),
        options.timeoutMs,
      );
      const request = this.send(fromId, peer.id, body);
      if (request === undefined) return;
      this.clock.setTimeout(() => {
        const api = this.apis.get(peer.id);
        if (!api) {
          finish(() => reject(new PeerCallError(`${method} to ${peer.id}: connection refused`, 'transient')));
          return;
        }
        api.handle(method, JSON.parse(request)).then(
          (answer) => this.reply(peer.id, fromId, answer, (text) => finish(() => resolve(JSON.parse(text)))),
          (error: unknown) => {
            const status = error instanceof RegistryError ? error.status : 500;
            const failure = new PeerCallError(`${method} to ${peer.id} answered ${status}`, classifyFailure(status), status);
            this.reply(peer.id, fromId, { error: String(error) }, () => finish(() => reject(failure)));
          },
        );
      }, this.delay(fromId, peer.id));
    });
  }

  /**
   * A snapshot stream: the request crosses the link, then every line the peer's
   * `openSnapshotStream` yields crosses it back, one link delay each, as the reader asks for it
   * (a reader that stops early ends the peer's stream). A line the link drops stalls the stream
   * until the idle timeout; a peer that crashes meanwhile resets it; a peer whose API serves no
   * stream (an older version) answers 404.
   */
  private async *stream(fromId: string, peer: PeerDescriptor, body: unknown, options: StreamOptions): AsyncGenerator<string> {
    const stalled = async (): Promise<never> => {
      await sleep(this.clock, options.idleTimeoutMs);
      throw new PeerCallError(`snapshot-stream to ${peer.id} timed out`, 'transient');
    };
    const request = this.send(fromId, peer.id, body);
    if (request === undefined) return await stalled();
    await sleep(this.clock, this.delay(fromId, peer.id));
    const api = this.apis.get(peer.id);
    if (!api) throw new PeerCallError(`snapshot-stream to ${peer.id}: connection refused`, 'transient');
    if (!api.openSnapshotStream) throw new PeerCallError(`snapshot-stream to ${peer.id} answered 404`, 'permanent', 404, 'REG_ERR_ROUTE_NOT_FOUND');
    let lines: AsyncIterable<string>;
    try {
      lines = api.openSnapshotStream(JSON.parse(request));
    } catch (error) {
      const status = error instanceof RegistryError ? error.status : 500;
      const code = error instanceof RegistryError ? error.code : undefined;
      await sleep(this.clock, this.delay(peer.id, fromId));
      throw new PeerCallError(`snapshot-stream to ${peer.id} answered ${status}`, classifyFailure(status), status, code);
    }
    for await (const line of lines) {
      if (this.apis.get(peer.id) !== api) throw new PeerCallError(`snapshot-stream to ${peer.id}: connection reset`, 'transient');
      const text = this.send(peer.id, fromId, line);
      if (text === undefined) return await stalled();
      await sleep(this.clock, this.delay(peer.id, fromId));
      yield text.endsWith('\n') ? text.slice(0, -1) : text;
    }
  }

  /** Serialises a message onto a link; undefined when the link drops it. */
  private send(from: string, to: string, payload: unknown): string | undefined {
    // A stream's lines are text already; everything else travels as JSON.
    const text = typeof payload === 'string' ? payload : requestJson(payload ?? null);
    const stats = this.linkStats.get(link(from, to)) ?? { messages: 0, bytes: 0 };
    stats.messages += 1;
    const crossRegion = (this.regions.get(from) ?? '') !== (this.regions.get(to) ?? '');
    stats.bytes += crossRegion && text.length >= this.compressMinBytes ? gzipSync(text).length : text.length;
    this.linkStats.set(link(from, to), stats);
    if (this.cuts.has(link(from, to))) return undefined;
    if (this.lossRatio > 0 && this.rng.next() < this.lossRatio) return undefined;
    return text;
  }

  private reply(from: string, to: string, payload: unknown, deliver: (text: string) => void): void {
    const text = this.send(from, to, payload);
    if (text === undefined) return;
    this.clock.setTimeout(() => deliver(text), this.delay(from, to));
  }

  private delay(from: string, to: string): number {
    const base = this.latency.get(link(from, to)) ?? this.defaultLatencyMs;
    return base + (this.jitterMs > 0 ? Math.floor(this.rng.next() * this.jitterMs) : 0);
  }
}

function link(from: string, to: string): string {
  return `${from}->${to}`;
}
