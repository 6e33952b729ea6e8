import type { Clock } from '../clock/clock.js';

import { isIPv4, isIPv6 } from 'node:net';

/**
 * Request rate per client (a token, or an address): one token bucket per client, `burst`
 * deep, refilled at `ratePerSecond`. Buckets are kept in least-recently-used order and at
 * most `maxClients` of them, so a flood of addresses costs bounded memory (a forgotten
 * client starts again with a full bucket).
 */

/**
 * Whether a request's address is this host's own: 127.0.0.0/8, ::1, or 127.x mapped into
 * IPv6 (`::ffff:127.0.0.1`, what a dual-stack socket reports for an IPv4 loopback caller).
 * Such a caller is a sidecar, a local agent, a load test or a dev setup on the peer's own
 * machine, which it could stop anyway; it is not limited per address unless configured.
 */
export function isLoopback(address: string): boolean {
  const v4 = address.toLowerCase().startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address;
  if (isIPv4(v4)) return v4.startsWith('127.');
  // Every group zero but a last 1: ::1 however it is written.
  return isIPv6(address) && /^[0:]*1$/.test(address);
}

/** Which limit counts a client request: its token's, its address's, or the loopback one. */
export type RateClientKind = 'token' | 'address' | 'loopback';

export interface RateClient {
  kind: RateClientKind;
  /** The bucket's key, e.g. `token:deployer` or `address:10.0.0.7`. */
  key: string;
}

/**
 * The bucket a client request is counted in: a valid token's own, whatever the address
 * (clients behind one proxy or NAT are told apart by their tokens); otherwise the address's,
 * a loopback address in a bucket of its own kind (limited only when configured).
 */
export function rateClientOf(address: string, tokenName: string | undefined): RateClient {
  if (tokenName !== undefined) return { kind: 'token', key: `token:${tokenName}` };
  return { kind: isLoopback(address) ? 'loopback' : 'address', key: `address:${address}` };
}

export interface BucketState {
  tokens: number;
  atMs: number;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

/**
 * One request against a bucket: refill for the time passed, then take one token if there is
 * one. Pure: returns the bucket's new state and the decision.
 */
export function takeToken(
  bucket: BucketState,
  nowMs: number,
  ratePerSecond: number,
  burst: number,
): { state: BucketState; decision: RateDecision } {
  const elapsedMs = Math.max(0, nowMs - bucket.atMs);
  const tokens = Math.min(burst, bucket.tokens + (elapsedMs * ratePerSecond) / 1_000);
  if (tokens >= 1) return { state: { tokens: tokens - 1, atMs: nowMs }, decision: { allowed: true } };
  const retryAfterMs = Math.ceil(((1 - tokens) * 1_000) / ratePerSecond);
  return { state: { tokens, atMs: nowMs }, decision: { allowed: false, retryAfterMs } };
}

export interface RateLimiterInit {
  /** 0 switches the limiter off. */
  ratePerSecond: number;
  burst: number;
  maxClients: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, BucketState>();

  constructor(
    private readonly clock: Clock,
    private readonly init: RateLimiterInit,
  ) {}

  get enabled(): boolean {
    return this.init.ratePerSecond > 0;
  }

  /** Clients tracked now. */
  get size(): number {
    return this.buckets.size;
  }

  /** Counts one request of `client`. */
  take(client: string): RateDecision {
    if (!this.enabled) return { allowed: true };
    const { ratePerSecond, burst, maxClients } = this.init;
    const nowMs = this.clock.nowMs();
    const bucket = this.buckets.get(client) ?? { tokens: burst, atMs: nowMs };
    const { state, decision } = takeToken(bucket, nowMs, ratePerSecond, burst);
    // Re-insert so that Map order is least recently used first.
    this.buckets.delete(client);
    this.buckets.set(client, state);
    if (this.buckets.size > maxClients) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    return decision;
  }

  /**
   * The `count` clients using most of their bucket now, most first: `used` is the share of the
   * burst spent (0 full bucket, 1 empty), refilled to now. For metrics at scrape time only:
   * one pass over the tracked buckets (at most `maxClients`), keeping the `count` heaviest in
   * a small sorted array (clients `keep` refuses are skipped); nothing is changed and nothing is kept between calls.
   */
  heaviest(count: number, keep: (client: string) => boolean = () => true): Array<{ client: string; used: number }> {
    const top: Array<{ client: string; used: number }> = [];
    if (!this.enabled || count <= 0) return top;
    const { ratePerSecond, burst } = this.init;
    const nowMs = this.clock.nowMs();
    for (const [client, bucket] of this.buckets) {
      if (!keep(client)) continue;
      const tokens = Math.min(burst, bucket.tokens + (Math.max(0, nowMs - bucket.atMs) * ratePerSecond) / 1_000);
      const used = (burst - tokens) / burst;
      if (used <= 0 || (top.length === count && used <= top[top.length - 1]!.used)) continue;
      let at = top.length;
      while (at > 0 && top[at - 1]!.used < used) at -= 1;
      top.splice(at, 0, { client, used });
      if (top.length > count) top.pop();
    }
    return top;
  }

  /** True when `client` has no token left now (without taking one). */
  exhausted(client: string): boolean {
    if (!this.enabled) return false;
    const bucket = this.buckets.get(client);
    if (!bucket) return false;
    return takeToken(bucket, this.clock.nowMs(), this.init.ratePerSecond, this.init.burst).decision.allowed === false;
  }
}
