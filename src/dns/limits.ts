import type { Clock } from '../clock/clock.js';
import type { DnsConfig } from '../config/protocols.js';
import { HeldShares, principalCapOf, shareOwnerOf, type HeldRefusal, type HeldSlot } from '../security/held-shares.js';
import { rateClientOf, RateLimiter } from '../security/rate-limit.js';

/**
 * What one source may make the DNS listener do (docs/dns.md, "Limits"). DNS carries no
 * credentials, so the principal is the source address: its queries per second (UDP and TCP
 * together) and its share of the TCP connections.
 */

/** Open TCP connections at most on the peer (each holds a socket and up to `maxQueuedBytes`). */
export const MAX_TCP_CONNECTIONS = 1_000;
/**
 * The share of them one source address may hold: a resolver opens a few, so a tenth leaves
 * room for ten sources holding all they may and keeps one from taking every slot.
 */
export const TCP_SHARE_PER_SOURCE = 0.1;
/** Sources whose rate is tracked at most (least recently seen forgotten first: bounded memory under spoofed floods). */
const MAX_RATE_SOURCES = 100_000;

export class DnsLimits {
  private readonly remote: RateLimiter;
  private readonly loopback: RateLimiter;
  readonly connections = new HeldShares({
    what: 'DNS TCP connections',
    peerSetting: 'the DNS listener',
    peerMax: MAX_TCP_CONNECTIONS,
    principalMax: principalCapOf(MAX_TCP_CONNECTIONS, TCP_SHARE_PER_SOURCE),
  });

  constructor(clock: Clock, config: Pick<DnsConfig, 'rateLimitPerSecond' | 'rateLimitBurst' | 'rateLimitLoopbackPerSecond'>) {
    const burst = config.rateLimitBurst;
    this.remote = new RateLimiter(clock, { ratePerSecond: config.rateLimitPerSecond, burst, maxClients: MAX_RATE_SOURCES });
    this.loopback = new RateLimiter(clock, { ratePerSecond: config.rateLimitLoopbackPerSecond, burst, maxClients: MAX_RATE_SOURCES });
  }

  /** Counts one query from `address`: false when the source is past its rate. */
  query(address: string): boolean {
    const client = rateClientOf(address, undefined);
    return (client.kind === 'loopback' ? this.loopback : this.remote).take(client.key).allowed;
  }

  /** A TCP connection slot for `address`, or the refusal of the peer's cap or the source's share. */
  connection(address: string): HeldSlot | HeldRefusal {
    return this.connections.take(shareOwnerOf(address, undefined));
  }
}
