import type { Clock } from '../clock/clock.js';
import type { Rng } from '../clock/rng.js';
import type { Logger } from '../log/logger.js';
import type { Registry } from '../registry/registry.js';
import type { StoredInstance } from '../registry/types.js';
import type { PeerDescriptor, PeerTransport } from '../transport/transport.js';
import { PeerChannel, type ChannelInit, type ChannelStats } from './channel.js';
import type { EncodedRequest } from '../transport/transport.js';
import { encodeReplicate } from './wire.js';

export interface ReplicatorComponents {
  clock: Clock;
  rng: Rng;
  registry: Registry;
  transport: PeerTransport;
  logger: Logger;
  isUp(peerId: string): boolean;
  reportContact(peerId: string): void;
}

export interface ReplicatorInit extends ChannelInit {
  /** This peer's region: channels to peers elsewhere batch over `crossRegionBatchDelayMs`. */
  selfRegion: string;
  crossRegionBatchDelayMs: number;
}

/**
 * Fans every local write out to one outbound channel per known peer (eager to peers of the
 * same region, batched over a longer delay to other regions). Only writes accepted
 * here (`origin: 'local'`) are sent: a write applied from another peer is never replicated
 * again, so there are no loops and no echo. Heartbeats never reach the change feed as
 * writes, so they cost nothing here.
 */
export class Replicator {
  private readonly channels = new Map<string, PeerChannel>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly components: ReplicatorComponents,
    private readonly init: ReplicatorInit,
  ) {}

  start(): void {
    this.unsubscribe ??= this.components.registry.store.onChange((change) => {
      if (change.kind !== 'write' || change.origin !== 'local') return;
      for (const channel of this.channels.values()) channel.enqueue(change.entry);
    });
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await Promise.all([...this.channels.values()].map((channel) => channel.stop()));
  }

  /** A peer joined: writes from now on are queued for it (anti-entropy brings it the past). */
  addPeer(peer: PeerDescriptor): void {
    if (peer.id === this.init.selfId || this.channels.has(peer.id)) return;
    const channel = new PeerChannel(
      peer,
      {
        clock: this.components.clock,
        rng: this.components.rng,
        transport: this.components.transport,
        logger: this.components.logger,
        encode: (entries) => this.encode(entries),
        isCurrent: (entry) => this.isCurrent(entry),
        isUp: (peerId) => this.components.isUp(peerId),
        reportContact: (peerId) => this.components.reportContact(peerId),
      },
      {
        ...this.init,
        // Eager inside the region; batched over a longer delay across slow, costly links.
        batchDelayMs: peer.region === this.init.selfRegion ? this.init.batchDelayMs : this.init.crossRegionBatchDelayMs,
      },
    );
    this.channels.set(peer.id, channel);
  }

  /** A peer is back: what queued for it while it was down goes now. */
  resume(peerId: string): void {
    this.channels.get(peerId)?.resume();
  }

  stats(): Record<string, ChannelStats> {
    return Object.fromEntries([...this.channels].map(([id, channel]) => [id, channel.snapshot()]));
  }

  private encode(entries: StoredInstance[]): EncodedRequest<'replicate'> {
    return encodeReplicate(this.init.selfId, entries, this.components.registry.leaseView());
  }

  private isCurrent(entry: StoredInstance): boolean {
    return this.components.registry.store.get(entry.record) === entry;
  }
}
