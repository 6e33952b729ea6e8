import { sleep, type Clock } from '../clock/clock.js';
import { shuffled, type Rng } from '../clock/rng.js';
import type { Logger } from '../log/logger.js';
import { unreachablePeerLevel } from '../log/startup-grace.js';
import { PeerCallError, timedOut, type PeerDescriptor, type PeerTransport } from '../transport/transport.js';
import type { AntiEntropy } from './anti-entropy.js';
import type { Inbox } from './inbox.js';
import { pullSnapshot, type PullProgress } from './snapshot-pull.js';

export interface BootstrapComponents {
  clock: Clock;
  rng: Rng;
  transport: PeerTransport;
  inbox: Inbox;
  antiEntropy: AntiEntropy;
  logger: Logger;
  learn(members: PeerDescriptor[]): void;
  reportContact(peerId: string): void;
  /**
   * Called when this peer's registry becomes unsettled: a pull has begun (the serving peer's
   * start frame or first page came), so until this peer is ready it holds, or may hold, part of
   * a registry: part of a settled peer's (the pull not done yet, or failed midway), or records
   * of an unsettled one. The node tells the peers it serves (snapshot-frames.ts) until it is
   * ready. Called again for each pull; once is enough.
   */
  unsettled?(): void;
  /**
   * The peers this peer knows now (those it started with and those learned since, from start
   * frames, pages and gossip), read at the start and end of each round. Default: the start list.
   */
  knownPeers?(): PeerDescriptor[];
  /** True once the peer is stopping: a sync still trying gives up (before its next peer or round). */
  stopping?(): boolean;
  /**
   * Resolves after `delayMs` (the wait between two rounds), or at once when the peer stops, so
   * that a stopped peer leaves no timer behind. Default: `sleep` on the clock.
   */
  wait?(delayMs: number): Promise<void>;
}

export interface BootstrapInit {
  selfId: string;
  callTimeoutMs: number;
  /** Digest buckets fetched per snapshot page (a peer that serves no stream). */
  bucketsPerPage: number;
  /** When this peer started: peers not up yet within the start-up grace are logged at debug. */
  startedAtMs: number;
  /** Wait before the second round of a sync that must go on; it doubles each round (default 1 s). */
  retryBaseMs?: number;
  /** Longest wait between two rounds (default 30 s). */
  retryMaxMs?: number;
}

/** First wait before a sync tries every peer again. */
export const BOOTSTRAP_RETRY_BASE_MS = 1_000;
/** Longest wait between two rounds of a sync that must go on. */
export const BOOTSTRAP_RETRY_MAX_MS = 30_000;

/** How start-up went: synced from a peer, or alone (no peer answered, or none configured). */
export type BootstrapResult = { from: string; records: number } | { from: null; records: 0 };

/** The wait before round `round + 1` (round 1 is the first retry): doubling from `baseMs`, capped at `maxMs`. */
export function retryDelayMs(round: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(round - 1, 30)));
}

/**
 * Whether a failed pull from one peer forbids starting alone: true when records were merged
 * from it (this peer holds part of a registry and must not answer it as whole), or when the peer
 * is there but could not finish (it answered 429, 503 such as `REG_ERR_SNAPSHOT_BUSY`, or 5xx;
 * its answer timed out after it took the connection; its answer could not be read). False when
 * it could not be reached (refused, reset, no connection in time) or refused this peer for good
 * (401, 403, another 4xx): then, as before, this peer may be the first of its cluster.
 */
export function failureForbidsStartingAlone(error: unknown, recordsReceived: number): boolean {
  if (recordsReceived > 0) return true;
  if (!(error instanceof PeerCallError)) return true;
  if (error.status !== undefined) return error.kind !== 'permanent';
  return timedOut(error);
}

/**
 * Whether a round in which no settled peer completed a pull still ends the sync: every peer
 * known at its end (`knownIds`) completed a pull in it (`completedIds`), each saying it was
 * unsettled. This peer then holds the union of every registry in the cluster, as current as
 * each was: there is no more whole one to wait for. Peers that all began pulling from one
 * another (a restart of the whole cluster, a pull of one cut off midway) would otherwise each
 * wait for another to be settled, for good. One peer not pulled whole (unreachable, cut off,
 * busy) keeps the wait: it may hold what the others lack.
 */
export function everyPeerGaveItsWhole(knownIds: readonly string[], completedIds: ReadonlySet<string>): boolean {
  return knownIds.length > 0 && knownIds.every((id) => completedIds.has(id));
}

/**
 * Before a new or restarted peer reports ready, it pulls a full snapshot from the first known
 * peer that answers (in random order): streamed when the peer serves a stream, in pages when it
 * is of an older version (snapshot-pull.ts). Then it runs one anti-entropy round with that peer
 * to catch what changed meanwhile. With no peer answering it starts alone: it may be the first
 * peer of the cluster, and anti-entropy will merge it in later. Peers that are not listening yet
 * while the cluster starts (log/startup-grace.ts) are no warning.
 *
 * It never starts alone holding part of a registry: when a pull failed midway (records merged,
 * then a timeout or a reset), or a peer that is up could not serve it (busy, 5xx), it tries every
 * peer again after a wait that doubles from `retryBaseMs` up to `retryMaxMs`, for as long as it
 * takes. Meanwhile the peer stays not ready (`/readyz` and the client routes answer 503).
 *
 * Only a pull from a settled peer completes the sync. A peer whose own sync has begun and is
 * not done (or failed midway) says it is unsettled; a complete pull from it merges its records
 * (nothing is thrown away) and goes on to the next peer. A round in which no settled peer
 * completed a pull but an unsettled one answered ends, like a failed one, in a wait and another
 * round: the peer becomes ready once a settled peer serves it (the unsettled one, once its own
 * sync is done). Peers that all start together (from their own data, or empty) are settled
 * until a pull reaches them: the first start frame or page each receives was sent before the
 * sender heard from anyone, so they mostly sync from one another at once; and a round in which
 * every known peer gave its whole registry, all unsettled, ends the sync too
 * (`everyPeerGaveItsWhole`), so that none waits on another for good.
 */
export async function bootstrap(
  peers: PeerDescriptor[],
  components: BootstrapComponents,
  init: BootstrapInit,
): Promise<BootstrapResult> {
  const log = components.logger.child({ component: 'bootstrap' });
  const baseMs = init.retryBaseMs ?? BOOTSTRAP_RETRY_BASE_MS;
  const maxMs = init.retryMaxMs ?? BOOTSTRAP_RETRY_MAX_MS;
  let quiet = true;
  let mustGoOn = false;
  const known = () => components.knownPeers?.() ?? peers;
  for (let round = 1; ; round++) {
    let goOnThisRound = false;
    /** Peers whose whole registry came this round, each unsettled; the records they brought. */
    const unsettledWhole = new Map<string, number>();
    let lastWhole: PeerDescriptor | undefined;
    for (const peer of shuffled(components.rng, known())) {
      if (components.stopping?.()) return { from: null, records: 0 };
      const progress: PullProgress = { records: 0, onSettled: () => components.unsettled?.() };
      try {
        const { via, settled } = await pullSnapshot(peer, components, init, progress);
        // Stopped while pulling: no closing round (anti-entropy is stopped; the peer never serves).
        if (components.stopping?.()) return { from: null, records: 0 };
        components.reportContact(peer.id);
        if (!settled) {
          // Its registry is known to be partial: merged, but no completion; another round follows.
          goOnThisRound = true;
          unsettledWhole.set(peer.id, progress.records);
          lastWhole = peer;
          log.info({ peer: peer.id, records: progress.records, via }, 'start-up sync from a peer that is itself still syncing; merged, trying the next');
          continue;
        }
        await components.antiEntropy.syncWith(peer, { closing: true });
        log.info({ from: peer.id, records: progress.records, via, rounds: round }, 'start-up sync done');
        return { from: peer.id, records: progress.records };
      } catch (error) {
        const answered = error instanceof PeerCallError && error.status !== undefined;
        const forbids = failureForbidsStartingAlone(error, progress.records);
        goOnThisRound ||= forbids;
        const level = forbids ? 'warn' : unreachablePeerLevel(components.clock.nowMs(), init.startedAtMs, answered);
        if (level === 'warn') quiet = false;
        log[level]({ peer: peer.id, records: progress.records, error: (error as Error).message }, 'start-up sync from peer failed; trying the next');
      }
    }
    if (lastWhole !== undefined && everyPeerGaveItsWhole(known().map((peer) => peer.id), new Set(unsettledWhole.keys()))) {
      const records = [...unsettledWhole.values()].reduce((sum, n) => sum + n, 0);
      await components.antiEntropy.syncWith(lastWhole, { closing: true });
      if (components.stopping?.()) return { from: null, records: 0 };
      log.info({ from: lastWhole.id, peers: unsettledWhole.size, records, rounds: round }, 'start-up sync done: every peer is itself syncing and gave its whole registry, which this peer now holds');
      return { from: lastWhole.id, records };
    }
    mustGoOn ||= goOnThisRound;
    if (known().length === 0) return { from: null, records: 0 };
    if (!mustGoOn) {
      if (quiet) log.info({ peers: known().length }, 'no other peer is up yet; starting alone (anti-entropy merges this peer in when they come up)');
      else log.warn({ peers: known().length }, 'no peer answered the start-up sync; starting alone');
      return { from: null, records: 0 };
    }
    const waitMs = retryDelayMs(round, baseMs, maxMs);
    log.warn({ peers: known().length, round, retryInMs: waitMs }, 'start-up sync incomplete; staying not ready and trying every peer again');
    await (components.wait ? components.wait(waitMs) : sleep(components.clock, waitMs));
    if (components.stopping?.()) return { from: null, records: 0 };
  }
}
