import PQueue from 'p-queue';
import type { Clock, TimerHandle } from '../clock/clock.js';
import type { Rng } from '../clock/rng.js';
import type { Logger } from '../log/logger.js';
import type { StoredInstance } from '../registry/types.js';
import { PeerCallError, type EncodedRequest, type FailureKind, type PeerDescriptor, type PeerTransport } from '../transport/transport.js';
import { cappedBackoffMs } from '../clock/backoff.js';
import { Outbox, type OutboxBatch } from './outbox.js';
import { callPeer } from '../transport/peer-answers.js';

export interface ChannelComponents {
  clock: Clock;
  rng: Rng;
  transport: PeerTransport;
  logger: Logger;
  /** The `replicate` request of these entries, encoded with their leases as of now. */
  encode(entries: StoredInstance[]): EncodedRequest<'replicate'>;
  /** Whether an entry is still the store's current one for its key: only those are taken, or put back after a failure. */
  isCurrent(entry: StoredInstance): boolean;
  /** Whether the peer is up; sending to a down peer waits until it is back. */
  isUp(peerId: string): boolean;
  reportContact(peerId: string): void;
}

export interface ChannelInit {
  selfId: string;
  /** Most records in one batch. */
  batchMaxRecords: number;
  /** How long the first write of a batch waits for company. */
  batchDelayMs: number;
  /** Most keys queued for one peer; beyond it the oldest are dropped. */
  queueMaxRecords: number;
  /** Batches in flight to one peer at once. */
  concurrency: number;
  callTimeoutMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

/** Figures of one channel, for `/v1/cluster` and the metrics. */
export interface ChannelStats {
  queued: number;
  inFlight: number;
  batchesSent: number;
  recordsSent: number;
  failures: Record<FailureKind, number>;
  /** Keys dropped: queue overflow plus batches refused for good. */
  dropped: number;
  consecutiveFailures: number;
  lastSuccessMs: number | null;
  lastFailureMs: number | null;
  lastError: string | null;
  /** Age of the oldest write still waiting to be sent. */
  lagMs: number;
}

/**
 * The outbound pipeline to one peer (Eureka's PeerEurekaNode, without its flaws): a bounded
 * outbox, batches flushed by size or after `batchDelayMs`, at most `concurrency` in flight
 * (p-queue), each outcome classified. Congestion and transient failures put the batch back
 * and back off exponentially; permanent ones drop it and count it. Nothing is sent while
 * membership says the peer is down; it resumes when the peer is back.
 */
export class PeerChannel {
  private readonly outbox: Outbox<StoredInstance>;
  private readonly queue: PQueue;
  private flushTimer: TimerHandle | undefined;
  private flushAtMs = 0;
  private backoffUntilMs = 0;
  private stopped = false;
  private readonly log: Logger;
  private readonly isCurrent: (entry: StoredInstance) => boolean;
  private readonly stats = {
    batchesSent: 0,
    recordsSent: 0,
    failures: { congestion: 0, transient: 0, permanent: 0 } as Record<FailureKind, number>,
    droppedRefused: 0,
    consecutiveFailures: 0,
    lastSuccessMs: null as number | null,
    lastFailureMs: null as number | null,
    lastError: null as string | null,
  };

  constructor(
    readonly peer: PeerDescriptor,
    private readonly components: ChannelComponents,
    private readonly init: ChannelInit,
  ) {
    this.outbox = new Outbox(init.queueMaxRecords);
    this.queue = new PQueue({ concurrency: init.concurrency });
    this.log = components.logger.child({ component: 'replication', to: peer.id });
    this.isCurrent = (entry) => components.isCurrent(entry);
  }

  /** Queues a local write for this peer: the entry it stored. */
  enqueue(entry: StoredInstance): void {
    if (this.stopped) return;
    this.outbox.add(entry, this.components.clock.nowMs());
    this.schedule();
  }

  /** The peer is back: send what waited. */
  resume(): void {
    this.backoffUntilMs = 0;
    this.schedule();
  }

  snapshot(): ChannelStats {
    const { droppedRefused, ...rest } = this.stats;
    return {
      ...rest,
      failures: { ...rest.failures },
      queued: this.outbox.size,
      inFlight: this.queue.pending,
      dropped: this.outbox.dropped + droppedRefused,
      lagMs: this.outbox.oldestAgeMs(this.components.clock.nowMs()),
    };
  }

  /** Stops sending; waits for batches in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.flushTimer?.cancel();
    this.flushTimer = undefined;
    await this.queue.onIdle();
  }

  /** Decides when the next batch goes: now, after the batch delay, or after the backoff. */
  private schedule(): void {
    if (this.stopped || this.outbox.size === 0) return;
    if (!this.components.isUp(this.peer.id)) return;
    const nowMs = this.components.clock.nowMs();
    const batchFull = this.outbox.size >= this.init.batchMaxRecords;
    const batchDueMs = batchFull ? nowMs : nowMs - this.outbox.oldestAgeMs(nowMs) + this.init.batchDelayMs;
    const dueMs = Math.max(batchDueMs, this.backoffUntilMs);
    if (dueMs <= nowMs) this.flush();
    else this.flushAt(dueMs);
  }

  private flushAt(atMs: number): void {
    if (this.flushTimer && this.flushAtMs <= atMs) return;
    this.flushTimer?.cancel();
    this.flushAtMs = atMs;
    this.flushTimer = this.components.clock.setTimeout(() => {
      this.flushTimer = undefined;
      this.flush();
    }, atMs - this.components.clock.nowMs());
  }

  private flush(): void {
    this.flushTimer?.cancel();
    this.flushTimer = undefined;
    while (!this.stopped && this.outbox.size > 0 && this.queue.pending + this.queue.size < this.init.concurrency) {
      // Entries superseded or purged since their write are passed over here. The batch is
      // encoded in this same turn (p-queue starts a task at once when a slot is free, and one
      // is), so what it sends is current.
      const batch = this.outbox.take(this.init.batchMaxRecords, this.isCurrent);
      if (batch.items.length === 0) break;
      // When a batch completes, what queued meanwhile goes (at once if it waited long enough).
      void this.queue.add(() => this.send(batch)).then(() => this.schedule());
    }
  }

  private async send(batch: OutboxBatch<StoredInstance>): Promise<void> {
    const request = this.components.encode(batch.items);
    try {
      await callPeer(this.components.transport, this.peer, 'replicate', request, { timeoutMs: this.init.callTimeoutMs });
      this.stats.batchesSent += 1;
      this.stats.recordsSent += request.items;
      this.stats.consecutiveFailures = 0;
      this.stats.lastSuccessMs = this.components.clock.nowMs();
      this.components.reportContact(this.peer.id);
    } catch (error) {
      this.onFailure(batch, error);
    }
  }

  private onFailure(batch: OutboxBatch<StoredInstance>, error: unknown): void {
    const kind: FailureKind = error instanceof PeerCallError ? error.kind : 'transient';
    const message = error instanceof Error ? error.message : String(error);
    this.stats.failures[kind] += 1;
    this.stats.lastFailureMs = this.components.clock.nowMs();
    this.stats.lastError = message;
    if (kind === 'permanent') {
      this.stats.droppedRefused += batch.items.length;
      this.log.warn({ records: batch.items.length, error: message }, 'peer refused a replication batch; dropped (anti-entropy will repair)');
      return;
    }
    this.outbox.restore(batch, this.isCurrent);
    this.stats.consecutiveFailures += 1;
    const delayMs = cappedBackoffMs(this.stats.consecutiveFailures, this.init.retryBaseMs, this.init.retryMaxMs, this.components.rng.next());
    this.backoffUntilMs = this.components.clock.nowMs() + delayMs;
    this.log.debug({ kind, error: message, retryInMs: delayMs, queued: this.outbox.size }, 'replication batch failed');
  }
}
