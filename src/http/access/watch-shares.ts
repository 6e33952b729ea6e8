import type { LimitsPort } from '../../adapters/limits.js';
import { RegistryError } from '../../errors.js';
import type { AdapterRecorders, HeldPoolRecorder } from '../../metrics/adapter-metrics.js';
import type { HeldShares, HeldSlot } from '../../security/held-shares.js';
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

/**
 * The native API's shares; with `metrics` (the native adapter's recorders), its pools are
 * exported as `watch_streams` and `long_polls` (held now, refusals by cap, heaviest principals).
 */
export function watchSharesOf(limits: LimitsPort, maxWatchers: number, metrics?: AdapterRecorders): WatchShares {
  const streams = limits.pool('watch streams', maxWatchers, 'cluster.watchMaxWatchers');
  const polls = limits.pool('long polls', maxWatchers, 'cluster.watchMaxWatchers');
  const take = (pool: HeldShares, recorder: HeldPoolRecorder | undefined, request: ShareFacts): HeldSlot => {
    const slot = limits.hold(pool, { address: request.ip, tokenName: rateNameOf(request.access?.principal) });
    if (!slot.held) {
      recorder?.refused(slot.cap);
      throw new RegistryError('REG_ERR_TOO_MANY_WATCHERS', slot.message, RETRY_AFTER_S);
    }
    return slot;
  };
  const streamsRecorder = metrics?.pool('watch_streams', streams);
  const pollsRecorder = metrics?.pool('long_polls', polls);
  return { stream: (request) => take(streams, streamsRecorder, request), longPoll: (request) => take(polls, pollsRecorder, request) };
}
