import type { Clock } from '../../clock/clock.js';
import type { LimitSettings } from '../../config/settings.js';
import { RegistryError } from '../../errors.js';
import { RateLimiter, rateClientOf, type RateClientKind, type RateDecision } from '../../security/rate-limit.js';

/**
 * The HTTP API's rate limits: which bucket table counts a request, and the 429 it answers.
 * The buckets themselves (token bucket, LRU bound) are src/security/rate-limit.ts; this file
 * only picks the table (loopback callers have their own limit) and words the refusal.
 */

/** The settings the limits read (`limits.*`). */
export type RateLimitSettings = Pick<LimitSettings, 'rateLimitPerSecond' | 'rateLimitLoopbackPerSecond' | 'rateLimitBurst' | 'rateLimitClientsMax'>;

/** `Retry-After` for a refused request: whole seconds, at least 1 (a 0 would invite an instant retry). */
export function retrySecondsOf(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1_000));
}

/**
 * The 429 message: who sent too much, the limit it passed and the setting that raises it.
 */
export function rateLimitedMessage(kind: RateClientKind, who: string, limits: RateLimitSettings, retrySeconds: number): string {
  const setting = kind === 'loopback' ? 'rateLimitLoopbackPerSecond' : 'rateLimitPerSecond';
  const sender = kind === 'token' ? `token ${who}` : `address ${who} (requests without a valid token)`;
  const shared = kind === 'token' ? '' : '; clients behind one proxy or NAT share its address: tokens are limited one by one';
  return (
    `too many requests from ${sender}: more than ${limits[setting]}/s after a burst of ${limits.rateLimitBurst}; ` +
    `retry in ${retrySeconds} s, or raise limits.${setting} and limits.rateLimitBurst${shared}`
  );
}

/** The answer to one bucket decision: nothing when allowed, else the 429 with its `Retry-After`. Pure. */
export function rateLimitRefusal(decision: RateDecision, kind: RateClientKind, who: string, limits: RateLimitSettings): RegistryError | undefined {
  if (decision.allowed) return undefined;
  const seconds = retrySecondsOf(decision.retryAfterMs);
  return new RegistryError('REG_ERR_RATE_LIMITED', rateLimitedMessage(kind, who, limits, seconds), seconds);
}

/** The bucket refused peer calls from an address are counted in (in the shared table). */
const peerRefusalKey = (address: string): string => `peer:${address}`;

/**
 * Two bucket tables: tokens and other hosts' addresses share one (`rateLimitPerSecond`),
 * loopback addresses have theirs (`rateLimitLoopbackPerSecond`, 0 by default: off). Refused
 * peer calls are counted in the shared table under `peer:<address>`, so a host that keeps
 * sending bad signatures is answered 429 before any signature work.
 */
export class ClientRateLimits {
  private readonly shared: RateLimiter;
  private readonly loopback: RateLimiter;

  constructor(
    clock: Clock,
    private readonly limits: RateLimitSettings,
  ) {
    const limiterOf = (ratePerSecond: number): RateLimiter =>
      new RateLimiter(clock, { ratePerSecond, burst: limits.rateLimitBurst, maxClients: limits.rateLimitClientsMax });
    this.shared = limiterOf(limits.rateLimitPerSecond);
    this.loopback = limiterOf(limits.rateLimitLoopbackPerSecond);
  }

  /** Counts one client request (by its valid token's name, else its address): the 429 to answer, if any. */
  check(address: string, tokenName?: string): RegistryError | undefined {
    // Both tables off (the rate limit switched off): no bucket to find, no key to build.
    if (!this.shared.enabled && !this.loopback.enabled) return undefined;
    const client = rateClientOf(address, tokenName);
    const decision = (client.kind === 'loopback' ? this.loopback : this.shared).take(client.key);
    return rateLimitRefusal(decision, client.kind, tokenName ?? address, this.limits);
  }

  /**
   * The `count` clients of the shared table (tokens, other hosts' addresses) using most of
   * their burst now (RateLimiter.heaviest): metrics, at scrape time. Peer-refusal buckets are
   * left out: they are not a client's share.
   */
  heaviest(count: number): Array<{ client: string; used: number }> {
    return this.shared.heaviest(count, (client) => !client.startsWith('peer:'));
  }

  /** Counts one refused peer call from `address`. */
  countPeerRefusal(address: string): void {
    this.shared.take(peerRefusalKey(address));
  }

  /** The 429 for an address whose refused peer calls used its bucket up, checked before any signature work. */
  checkPeerRefusals(address: string): RegistryError | undefined {
    if (!this.shared.exhausted(peerRefusalKey(address))) return undefined;
    return new RegistryError('REG_ERR_RATE_LIMITED', 'too many refused peer requests from this address; retry later', 1);
  }
}
