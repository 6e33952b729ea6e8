import type { Clock } from '../clock/clock.js';
import { shuffled, type Rng } from '../clock/rng.js';
import type { Logger } from '../log/logger.js';
import { unreachablePeerLevel } from '../log/startup-grace.js';
import { callPeer } from '../transport/peer-answers.js';
import type { SnapshotRequest } from '../transport/peer-calls.js';
import { PeerCallError, type PeerDescriptor, type PeerTransport } from '../transport/transport.js';
import type { AntiEntropy } from './anti-entropy.js';
import type { Inbox } from './inbox.js';

export interface BootstrapComponents {
  clock: Clock;
  rng: Rng;
  transport: PeerTransport;
  inbox: Inbox;
  antiEntropy: AntiEntropy;
  logger: Logger;
  learn(members: PeerDescriptor[]): void;
  reportContact(peerId: string): void;
}

export interface BootstrapInit {
  selfId: string;
  callTimeoutMs: number;
  /** Digest buckets fetched per snapshot page. */
  bucketsPerPage: number;
  /** When this peer started: peers not up yet within the start-up grace are logged at debug. */
  startedAtMs: number;
}

/** How start-up went: synced from a peer, or alone (no peer answered, or none configured). */
export type BootstrapResult = { from: string; records: number } | { from: null; records: 0 };

/**
 * Before a new or restarted peer reports ready, it pulls a full snapshot from the first
 * known peer that answers (in random order), page by page, then runs one anti-entropy
 * round with it to catch what changed meanwhile. With no peer answering it starts alone:
 * it may be the first peer of the cluster, and anti-entropy will merge it in later. Peers
 * that are not listening yet while the cluster starts (log/startup-grace.ts) are no warning.
 */
export async function bootstrap(
  peers: PeerDescriptor[],
  components: BootstrapComponents,
  init: BootstrapInit,
): Promise<BootstrapResult> {
  const log = components.logger.child({ component: 'bootstrap' });
  let quiet = true;
  for (const peer of shuffled(components.rng, peers)) {
    try {
      let records = 0;
      let fromBucket: number | null = 0;
      while (fromBucket !== null) {
        const request: SnapshotRequest = { from: init.selfId, fromBucket, bucketSpan: init.bucketsPerPage };
        const page = await callPeer(components.transport, peer, 'snapshot', request, { timeoutMs: init.callTimeoutMs });
        components.inbox.apply(peer.id, page.records, 'repair');
        records += page.records.length;
        components.learn(page.members);
        fromBucket = page.nextBucket !== null && page.nextBucket > fromBucket ? page.nextBucket : null;
      }
      components.reportContact(peer.id);
      await components.antiEntropy.syncWith(peer);
      log.info({ from: peer.id, records }, 'start-up sync done');
      return { from: peer.id, records };
    } catch (error) {
      const answered = error instanceof PeerCallError && error.status !== undefined;
      const level = unreachablePeerLevel(components.clock.nowMs(), init.startedAtMs, answered);
      if (level === 'warn') quiet = false;
      log[level]({ peer: peer.id, error: (error as Error).message }, 'start-up sync from peer failed; trying the next');
    }
  }
  if (peers.length === 0) return { from: null, records: 0 };
  if (quiet) log.info({ peers: peers.length }, 'no other peer is up yet; starting alone (anti-entropy merges this peer in when they come up)');
  else log.warn({ peers: peers.length }, 'no peer answered the start-up sync; starting alone');
  return { from: null, records: 0 };
}
