import type { Clock } from '../clock/clock.js';
import { parseVersion } from '../clock/hlc.js';
import type { Logger } from '../log/logger.js';
import type { Registry } from '../registry/registry.js';
import { DelaySampler, type DelaySummary } from './delay-sampler.js';
import type { ReplicateResponse } from '../transport/peer-calls.js';
import { fromWireRecord, parseWireRecord } from './wire.js';

/** Where a batch of records comes from: live replication, or a repair (anti-entropy, snapshot). */
export type InboundSource = 'replication' | 'repair';

/** Counts of what the inbox did, for `/v1/cluster` and the metrics. */
export interface InboxStats {
  batches: number;
  applied: number;
  ignored: number;
  reasserted: number;
  invalid: number;
}

/**
 * The one inbound path for records from other peers, whether they came in a replication
 * batch, an anti-entropy exchange or a start-up snapshot, over HTTP or the simulated network.
 * Each record is checked, then merged by the registry (last writer wins); what is applied is
 * announced as a remote change and never replicated again.
 */
export class Inbox {
  readonly stats: InboxStats = { batches: 0, applied: 0, ignored: 0, reasserted: 0, invalid: 0 };
  /**
   * Write-to-apply delay of replicated writes: now minus the write's version time. Exact on one
   * machine; across machines it includes the clock offset between the writer and this peer.
   */
  readonly delay = new DelaySampler();
  private readonly log: Logger;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    logger: Logger,
  ) {
    this.log = logger.child({ component: 'inbox' });
  }

  delaySummary(): DelaySummary {
    return this.delay.summary();
  }

  /** Applies a batch of raw records; invalid ones are skipped and counted, never fatal. */
  apply(from: string, records: readonly unknown[], source: InboundSource = 'replication'): ReplicateResponse {
    this.stats.batches += 1;
    let applied = 0;
    let ignored = 0;
    let invalid = 0;
    for (const raw of records) {
      let parsed;
      try {
        parsed = fromWireRecord(parseWireRecord(raw));
      } catch (error) {
        invalid += 1;
        this.log.warn({ from, error: (error as Error).message }, 'invalid record from peer skipped');
        continue;
      }
      const decision = this.registry.applyRemote(parsed.record, parsed.leaseRemainingMs);
      if (decision === 'ignore') ignored += 1;
      else applied += 1;
      if (decision === 'apply' && source === 'replication') {
        this.delay.add(this.clock.nowMs() - parseVersion(parsed.record.version).wallMs);
      }
      if (decision === 'reassert') this.stats.reasserted += 1;
    }
    this.stats.applied += applied;
    this.stats.ignored += ignored;
    this.stats.invalid += invalid;
    return { applied, ignored, invalid };
  }
}
