import type { Clock } from '../clock/clock.js';
import type { Rng } from '../clock/rng.js';
import { backoffDelayMs, type BackoffPolicy, type FailureReason } from './failover.js';
import type { ClientLogger } from './logger.js';

/** What the client knows about one peer. */
export interface PeerState {
  url: string;
  /** Failures since the last success. */
  consecutiveFailures: number;
  /** The peer is left alone until then (epoch ms; 0: usable). */
  retryAtMs: number;
  lastFailure: FailureReason | null;
}

/** The peer to call now, or how long until one is usable again. */
export type PeerChoice = { peer: string } | { waitMs: number };

/**
 * Sticky peer selection with failover. The client talks to one peer (the first listed, at
 * first) for as long as it answers: sticking to one peer means its heartbeats never cause a
 * lease takeover. A failure (connection error, timeout, 5xx, 429) moves the client to the
 * next peer in the list and leaves the failed one alone for a backoff that doubles with each
 * consecutive failure; a peer that answers again is not failed back to (that would cost a
 * takeover per flap). When every peer is backing off, callers wait for the first to be usable.
 */
export class PeerSelector {
  private index = 0;
  private readonly states: PeerState[];
  private readonly log: ClientLogger;

  constructor(
    private readonly components: { clock: Clock; rng: Rng; logger: ClientLogger },
    private readonly init: BackoffPolicy & { peers: readonly string[] },
  ) {
    if (init.peers.length === 0) throw new Error('PeerSelector needs at least one peer');
    this.states = init.peers.map((url) => ({ url, consecutiveFailures: 0, retryAtMs: 0, lastFailure: null }));
    this.log = components.logger.child({ component: 'peers' });
  }

  /** The peer the client sticks to now. */
  get current(): string {
    return this.states[this.index]!.url;
  }

  /**
   * The current peer if it is not backing off, else the next one in list order that is not
   * (and it becomes current); when all are, the wait until the first one is usable again.
   */
  choose(): PeerChoice {
    const nowMs = this.components.clock.nowMs();
    const count = this.states.length;
    for (let step = 0; step < count; step++) {
      const i = (this.index + step) % count;
      const state = this.states[i]!;
      if (state.retryAtMs <= nowMs) {
        if (i !== this.index) this.log.info({ from: this.current, to: state.url }, 'switching to another peer');
        this.index = i;
        return { peer: state.url };
      }
    }
    const firstRetryMs = Math.min(...this.states.map((state) => state.retryAtMs));
    return { waitMs: Math.max(1, firstRetryMs - nowMs) };
  }

  /** The peer answered: its failure count starts over. */
  succeeded(peer: string): void {
    const state = this.stateOf(peer);
    if (!state) return;
    state.consecutiveFailures = 0;
    state.retryAtMs = 0;
  }

  /**
   * The peer failed: it backs off (at least `retryAfterMs` when it said so) and, if it was the
   * current peer, the client moves on to the next one.
   */
  failed(peer: string, reason: FailureReason, retryAfterMs = 0): void {
    const state = this.stateOf(peer);
    if (!state) return;
    state.consecutiveFailures += 1;
    state.lastFailure = reason;
    const delayMs = Math.max(retryAfterMs, backoffDelayMs(state.consecutiveFailures, this.init, this.components.rng.next()));
    state.retryAtMs = this.components.clock.nowMs() + delayMs;
    this.log.warn({ peer, reason, consecutiveFailures: state.consecutiveFailures, backoffMs: delayMs }, 'peer failed');
    if (peer === this.current) this.index = (this.index + 1) % this.states.length;
  }

  /** Every peer's state, in list order (for status pages and tests). */
  snapshot(): PeerState[] {
    return this.states.map((state) => ({ ...state }));
  }

  private stateOf(peer: string): PeerState | undefined {
    return this.states.find((state) => state.url === peer);
  }
}
