import type { LimitsPort } from '../../adapters/limits.js';
import { RegistryError } from '../../errors.js';
import type { HeldSlot } from '../../security/held-shares.js';
import type { Principal } from '../../security/tokens.js';
import { rateNameOf } from './client-auth.js';

/**
 * The native API's held slots, taken from the adapter contract's pools (limits port): watch
 * streams and long polls, each with `cluster.watchMaxWatchers` for the peer (as the watch hub
 * counts them) and a share per principal (`limits.heldSharePerPrincipalRatio`), so that one
 * token (or one address without a token) holding all it may leaves room for every other
 * client. A refusal is /v1's 429 `REG_ERR_TOO_MANY_WATCHERS` (the TypeScript client then falls
 * back from a stream to long polls, which have their own pool and share), naming the cap.
 */

/** What a request tells the shares: its address, and the principal the access guard found (none in dev mode). */
export interface ShareFacts {
  ip: string;
  access: { principal?: Principal | undefined } | null;
}

export interface WatchShares {
  /** A watch stream's slot for this request's principal; throws 429 past the peer's cap or the principal's share. */
  stream(request: ShareFacts): HeldSlot;
  /** A long poll's slot, likewise. */
  longPoll(request: ShareFacts): HeldSlot;
}

/** Seconds a refused client should wait: a held slot is freed when a stream ends or a poll answers. */
const RETRY_AFTER_S = 5;

export function watchSharesOf(limits: LimitsPort, maxWatchers: number): WatchShares {
  const streams = limits.pool('watch streams', maxWatchers, 'cluster.watchMaxWatchers');
  const polls = limits.pool('long polls', maxWatchers, 'cluster.watchMaxWatchers');
  const take = (pool: typeof streams, request: ShareFacts): HeldSlot => {
    const slot = limits.hold(pool, { address: request.ip, tokenName: rateNameOf(request.access?.principal) });
    if (!slot.held) throw new RegistryError('REG_ERR_TOO_MANY_WATCHERS', slot.message, RETRY_AFTER_S);
    return slot;
  };
  return { stream: (request) => take(streams, request), longPoll: (request) => take(polls, request) };
}
