import type { LimitsPort } from '../adapters/limits.js';
import type { Clock } from '../clock/clock.js';
import type { DnsConfig } from './declaration.js';
import type { HeldRefusal, HeldShares, HeldSlot } from '../security/held-shares.js';
import { isLoopback, RateLimiter } from '../security/rate-limit.js';

/**
 * What one source may make the DNS listener do (docs/dns.md, "Limits"), on the adapter
 * contract's limits port (src/adapters/limits.ts). DNS carries no credentials, so the
 * principal is the source address:
 * - every query, UDP or TCP, counts once against the peer-wide rate limit (`limits.*`), the
 *   same budget the address has on every other protocol;
 * - a UDP query also counts against `dns.udpRateLimitPerSecond`, a tighter limit of DNS's
 *   own: a UDP source may be spoofed, and an answer up to 25 times the query's size would
 *   otherwise make the peer an amplifier aimed at whoever the flood names. Loopback sources
 *   are left out of it: a spoofed loopback source never arrives from the network;
 * - TCP connections come from the contract's pool of held slots, with the share of
 *   `limits.heldSharePerPrincipalRatio` per source.
 */

/** Open TCP connections at most on the peer (each holds a socket and up to `maxQueuedBytes`). */
export const MAX_TCP_CONNECTIONS = 1_000;
/** The pool's name in the limits port (and in its refusals' messages). */
export const TCP_POOL = 'DNS TCP connections';
/** Sources whose UDP rate is tracked at most (least recently seen forgotten first: bounded memory under spoofed floods). */
const MAX_UDP_SOURCES = 100_000;

export class DnsLimits {
  private readonly udp: RateLimiter;
  readonly connections: HeldShares;

  constructor(
    clock: Clock,
    config: Pick<DnsConfig, 'udpRateLimitPerSecond' | 'udpRateLimitBurst'>,
    private readonly limits: LimitsPort,
  ) {
    this.udp = new RateLimiter(clock, { ratePerSecond: config.udpRateLimitPerSecond, burst: config.udpRateLimitBurst, maxClients: MAX_UDP_SOURCES });
    this.connections = limits.pool(TCP_POOL, MAX_TCP_CONNECTIONS, `the DNS listener's fixed cap of ${MAX_TCP_CONNECTIONS}`);
  }

  /** Counts one UDP query from `address`: false when the source is past either of its rates. */
  udpQuery(address: string): boolean {
    if (this.udp.enabled && !isLoopback(address) && !this.udp.take(address).allowed) return false;
    return this.limits.rate({ address }) === undefined;
  }

  /** Counts one TCP query from `address` (a real source: only the peer-wide rate). */
  tcpQuery(address: string): boolean {
    return this.limits.rate({ address }) === undefined;
  }

  /** A TCP connection slot for `address`, or the refusal of the peer's cap or the source's share. */
  connection(address: string): HeldSlot | HeldRefusal {
    return this.limits.hold(this.connections, { address });
  }
}
