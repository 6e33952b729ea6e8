import type { Logger } from '../log/logger.js';
import type { ExpiryCheck, ExpiryRound } from '../lease/reaper.js';
import { instanceKeyString, type StoredInstance } from '../registry/types.js';
import { callPeer } from '../transport/peer-answers.js';
import type { PeerDescriptor, PeerTransport } from '../transport/transport.js';
import type { Inbox } from './inbox.js';

export interface LeaseCheckComponents {
  transport: PeerTransport;
  inbox: Inbox;
  logger: Logger;
  /** The other peers that are up (not this one): only they are asked. */
  livePeers: () => PeerDescriptor[];
  reportContact: (peerId: string) => void;
}

export interface LeaseCheckInit {
  selfId: string;
  callTimeoutMs: number;
  /** Most instances asked about in one call. */
  batchMaxEntries: number;
}

/** One instance asked about: at which version, since when, and whether every peer has answered. */
interface Asked {
  entry: StoredInstance;
  version: string;
  askedAtMs: number;
  answered: boolean;
}

/**
 * The owner's question before it evicts (`lease-check`, transport/peer-calls.ts): "does one of
 * you hear the client of these instances?". Heartbeats are not replicated, so a client that
 * moved to another peer while its owner lived (it failed over, or a register it gave up on was
 * applied here last) is heard only there; evicting at once would hide the instance here, and
 * on every peer the eviction reaches first, until that peer's takeover comes back one
 * replication round trip later (chaos seed 8675348, 5 peers: 2.5 s on a loaded machine). A
 * peer that hears it takes it over in its answer; the owner applies that takeover and the
 * instance never stops being served. Traffic happens only at expiries, never per heartbeat.
 *
 * Two steps, across reaper runs: an instance not asked about yet is held (served) and asked
 * about; once every live peer has answered (or failed to: a peer that cannot answer is taken
 * as not hearing it), it is cleared, and evicted by the reaper run that follows (`answered`
 * calls for one at once). An instance that changes meanwhile (a heartbeat here, a takeover, a
 * newer version) leaves the reaper's expired list and is forgotten here.
 */
export class LeaseCheck implements ExpiryCheck {
  /**
   * By stored entry, not by key string: a newer version of an instance is a new entry, so it is
   * asked about anew, and a run builds no string per instance (with a key string each, this
   * loop was 112-133 ms of the reaper's turn when a tenth of 1,000,000 expired together, 32-48
   * ms by entry: bench/findings.md, 2026-12-06 evening). The strings the question carries are
   * built per batch as it is sent (`askPeer`), each after the previous call's answer: in turns
   * of their own.
   */
  private asked = new Map<StoredInstance, Asked>();
  private readonly log: Logger;

  constructor(
    private readonly components: LeaseCheckComponents,
    private readonly init: LeaseCheckInit,
  ) {
    this.log = components.logger.child({ component: 'lease-check' });
  }

  /**
   * A reaper run's round: `cleared` for each expired instance, over as many turns of the event
   * loop as the run takes, then `close`, which starts the questions about the new ones and
   * forgets what was not given (it left the expired list). A round left unclosed (the run was
   * dropped) changes nothing.
   */
  begin(nowMs: number, answered: () => void): ExpiryRound {
    const peers = this.components.livePeers();
    if (peers.length === 0) {
      // Nobody else to hear a client: evict as a peer alone does.
      return { cleared: () => true, close: () => this.asked.clear() };
    }
    const next = new Map<StoredInstance, Asked>();
    const toAsk: Asked[] = [];
    // A call that never settles (it cannot outlive its timeout, but the check does not rely on it).
    const giveUpMs = 2 * this.init.callTimeoutMs;
    const cleared = (entry: StoredInstance): boolean => {
      const known = this.asked.get(entry);
      if (known && known.version === entry.record.version) {
        next.set(entry, known);
        return known.answered || nowMs - known.askedAtMs >= giveUpMs;
      }
      const asked: Asked = { entry, version: entry.record.version, askedAtMs: nowMs, answered: false };
      next.set(entry, asked);
      toAsk.push(asked);
      return false;
    };
    const close = (): void => {
      this.asked = next;
      if (toAsk.length === 0) return;
      // Never an unhandled rejection (it would stop the peer): what fails here is logged, and
      // the instances are cleared by the give-up bound at a later run.
      this.ask(toAsk, peers, answered).catch((error: unknown) => this.log.error({ error: (error as Error).message }, 'lease check failed'));
    };
    return { cleared, close };
  }

  /** How many instances are being asked about and not answered yet (tests; `/v1/cluster` shows the reaper's `checking`). */
  get pending(): number {
    let count = 0;
    for (const asked of this.asked.values()) if (!asked.answered) count += 1;
    return count;
  }

  private async ask(toAsk: readonly Asked[], peers: PeerDescriptor[], answered: () => void): Promise<void> {
    const outcomes = await Promise.allSettled(peers.map((peer) => this.askPeer(peer, toAsk)));
    const takenOver = outcomes.reduce((sum, outcome) => sum + (outcome.status === 'fulfilled' ? outcome.value : 0), 0);
    const failed = outcomes.filter((outcome) => outcome.status === 'rejected').length;
    for (const asked of toAsk) asked.answered = true;
    this.log.debug({ instances: toAsk.length, peers: peers.length, takenOver, failed }, 'lease check answered');
    answered();
  }

  /** Asks one peer in batches; applies what it took over. Returns how many it took over. */
  private async askPeer(peer: PeerDescriptor, toAsk: readonly Asked[]): Promise<number> {
    const { transport, inbox, reportContact } = this.components;
    let applied = 0;
    for (let start = 0; start < toAsk.length; start += this.init.batchMaxEntries) {
      const entries: Array<[string, string]> = [];
      const end = Math.min(toAsk.length, start + this.init.batchMaxEntries);
      for (let i = start; i < end; i++) entries.push([instanceKeyString(toAsk[i]!.entry.record), toAsk[i]!.version]);
      const request = { from: this.init.selfId, entries };
      const answer = await callPeer(transport, peer, 'lease-check', request, { timeoutMs: this.init.callTimeoutMs });
      reportContact(peer.id);
      if (answer.records.length > 0) applied += inbox.apply(peer.id, answer.records, 'repair').applied;
    }
    return applied;
  }
}
