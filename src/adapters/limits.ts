import type { Clock } from '../clock/clock.js';
import type { LimitSettings } from '../config/settings.js';
import type { RegistryError } from '../errors.js';
import { ClientRateLimits, type RateLimitSettings } from '../http/access/rate-limit.js';
import { HeldShares, principalCapOf, type HeldRefusal, type HeldSlot } from '../security/held-shares.js';
import { rateClientOf } from '../security/rate-limit.js';

/**
 * The limits port of the adapter contract (contract.ts): ONE rate limiter for the whole peer,
 * so a token or an address has one budget whatever protocol it speaks (/v1, Eureka, Consul,
 * xDS, DNS, Nacos: before this, Consul's buckets were a second table and a token had twice the
 * rate), and the pools of held slots (watch streams, long polls, blocking queries, xDS streams,
 * DNS TCP connections) with a share per principal (src/security/held-shares.ts). Made once
 * per peer (ports.ts); every adapter takes its pool from here by name.
 */

/** The settings the limits read (`limits.*`). */
export type LimitsSettings = RateLimitSettings & Pick<LimitSettings, 'heldSharePerPrincipalRatio'>;

/** Who a request is for the limits: its valid token's name (none for dev mode's anonymous or no token), and its address. */
export interface LimitSubject {
  address: string;
  /** A valid token's name; undefined without one (then the address counts). */
  tokenName?: string | undefined;
}

export class LimitsPort {
  /** The peer's rate limit tables (the HTTP access guard counts in these same buckets). */
  readonly rates: ClientRateLimits;
  private readonly pools = new Map<string, HeldShares>();

  constructor(
    clock: Clock,
    private readonly settings: LimitsSettings,
  ) {
    this.rates = new ClientRateLimits(clock, settings);
  }

  /** Counts one request against the peer-wide rate limit: the 429 to answer (as data: status, message, Retry-After), if any. */
  rate(subject: LimitSubject): RegistryError | undefined {
    return this.rates.check(subject.address, subject.tokenName);
  }

  /**
   * The pool of held slots named `what` (`'xds streams'`, `'consul blocking queries'`), made on
   * first use with a cap of `peerMax` for the peer and a share of it per principal
   * (`limits.heldSharePerPrincipalRatio`); the same pool for the same name afterwards (a
   * second call with another cap is a wiring error and throws). `peerSetting` names the
   * setting that raises `peerMax`, for the refusal's message.
   */
  pool(what: string, peerMax: number, peerSetting: string): HeldShares {
    const existing = this.pools.get(what);
    if (existing) {
      if (existing.peerMax !== peerMax) throw new Error(`held pool ${what} asked with cap ${peerMax}, made with ${existing.peerMax}`);
      return existing;
    }
    const principalMax = principalCapOf(peerMax, this.settings.heldSharePerPrincipalRatio);
    const pool = new HeldShares({ what, peerMax, principalMax, peerSetting });
    this.pools.set(what, pool);
    return pool;
  }

  /**
   * Takes a slot of `pool` for `subject`: the slot, or which cap refused it and why. A loopback
   * caller without a token is held to the peer's cap only, as the rate limit exempts it by
   * default (a sidecar, a local agent or a load test on the peer's host could stop it anyway).
   */
  hold(pool: HeldShares, subject: LimitSubject): HeldSlot | HeldRefusal {
    const client = rateClientOf(subject.address, subject.tokenName);
    return pool.take(client.key, client.kind === 'loopback');
  }

  /** Every pool made so far, by name (metrics, tests). */
  get heldPools(): ReadonlyMap<string, HeldShares> {
    return this.pools;
  }
}
