import { rateClientOf } from './rate-limit.js';

/**
 * Shares of what a peer holds open for its clients: watch streams, long polls, Consul blocking
 * queries, xDS streams, DNS TCP connections, Nacos subscribers. Each such pool has a cap for
 * the whole peer and a smaller one per principal (a valid token, or the source address of a
 * request without one), so one client holding all it may still leaves room for the others:
 * without the share, one read-only token could take every slot and every other client,
 * operators included, would be refused.
 *
 * Held slots cost little memory each (7-9 KB for a held HTTP request), so the caps are
 * generous; the share is about fairness, not memory. No I/O and no time here: an adapter asks
 * `take` when a client opens something and calls the slot's `release` when it ends, and words
 * a refusal in its own protocol (a 429, a gRPC RESOURCE_EXHAUSTED, a closed connection).
 */

/** Who holds a slot: `token:NAME` for a valid token, else `address:IP` (the rate limit's keys). */
export function shareOwnerOf(address: string, tokenName: string | undefined): string {
  return rateClientOf(address, tokenName).key;
}

/** The per-principal cap that `ratio` of a peer-wide cap gives: at least 1, at most the peer's cap. */
export function principalCapOf(peerMax: number, ratio: number): number {
  return Math.min(peerMax, Math.max(1, Math.floor(peerMax * ratio)));
}

export interface HeldSharesInit {
  /** What is held, for messages: `watch streams and long polls`, `xDS streams`. */
  what: string;
  /** The setting that raises the peer-wide cap, for messages: `cluster.watchMaxWatchers`. */
  peerSetting: string;
  /** Most slots the whole peer holds at once. */
  peerMax: number;
  /** Most slots one principal holds at once (`principalCapOf`). */
  principalMax: number;
}

/** A held slot. `release` is idempotent: a second call (an error path after a close) frees nothing more. */
export interface HeldSlot {
  readonly held: true;
  release(): void;
}

/** A refused slot: which cap refused it, and a message that says what to do. */
export interface HeldRefusal {
  readonly held: false;
  readonly cap: 'peer' | 'principal';
  readonly message: string;
}

/** One pool of held slots with a cap for the peer and a share per principal. */
export class HeldShares {
  private total = 0;
  /** Slots held per owner; an owner is dropped at zero, so the map holds only current holders. */
  private readonly byOwner = new Map<string, number>();

  constructor(private readonly init: HeldSharesInit) {}

  /**
   * Takes a slot for `owner` (`shareOwnerOf`), or answers which cap refuses it. `shareExempt`
   * (a loopback caller without a token: a sidecar, a local agent, a load test on the peer's own
   * host, which could stop the peer anyway, as the rate limit has it) is held to the peer's cap only.
   */
  take(owner: string, shareExempt = false): HeldSlot | HeldRefusal {
    const { what, peerMax, principalMax, peerSetting } = this.init;
    if (this.total >= peerMax) {
      return { held: false, cap: 'peer', message: `this peer already holds ${peerMax} ${what} (${peerSetting}); retry later or use another peer` };
    }
    const mine = this.byOwner.get(owner) ?? 0;
    if (!shareExempt && mine >= principalMax) {
      const who = owner.startsWith('token:') ? `token ${owner.slice(6)}` : `address ${owner.slice(owner.indexOf(':') + 1)}`;
      return {
        held: false,
        cap: 'principal',
        message:
          `${who} already holds ${principalMax} ${what}, its share of this peer's ${peerMax} (limits.heldSharePerPrincipalRatio); ` +
          'close some, or give each client its own token',
      };
    }
    this.byOwner.set(owner, mine + 1);
    this.total += 1;
    let released = false;
    return {
      held: true,
      release: () => {
        if (released) return;
        released = true;
        this.total -= 1;
        const left = (this.byOwner.get(owner) ?? 1) - 1;
        if (left > 0) this.byOwner.set(owner, left);
        else this.byOwner.delete(owner);
      },
    };
  }

  /** Most slots the whole peer holds at once. */
  get peerMax(): number {
    return this.init.peerMax;
  }

  /** Most slots one principal holds at once. */
  get principalMax(): number {
    return this.init.principalMax;
  }

  /** Slots held on the whole peer. */
  get held(): number {
    return this.total;
  }

  /** Slots `owner` holds. */
  heldBy(owner: string): number {
    return this.byOwner.get(owner) ?? 0;
  }

  /**
   * The `count` owners holding the most slots, most first (for metrics: the heaviest few, a
   * bounded label set). Linear in the number of current holders, read at scrape time only.
   */
  heaviest(count: number): Array<{ owner: string; held: number }> {
    const top: Array<{ owner: string; held: number }> = [];
    for (const [owner, held] of this.byOwner) {
      if (top.length < count) top.push({ owner, held });
      else if (held > top[top.length - 1]!.held) top[top.length - 1] = { owner, held };
      else continue;
      top.sort((a, b) => b.held - a.held);
    }
    return top;
  }
}
