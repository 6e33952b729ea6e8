import type { RegistryConfig } from '../../config/load.js';
import { RegistryError } from '../../errors.js';
import { isLoopback } from '../../security/rate-limit.js';

/**
 * DNS rebinding: a web page on `evil.example` makes its name resolve to 127.0.0.1, and the
 * browser then sends the page's requests to a peer listening on loopback, with `Host:
 * evil.example`. A dev peer (no token configured) would answer them all, writes included. So a
 * dev peer on loopback serves only requests whose `Host` names it: a loopback address, a
 * `localhost` name, the host it listens on, or the host of a peer URL of its configuration.
 * A peer with tokens needs none of this (the page has no token), nor does one on a network
 * address (reached by its own name; rebinding to it gains nothing a direct request would not).
 * Pure: the HTTP guard (access-guard.ts) and the Consul app apply it before anything else.
 */

/** The host part of a `Host` header (no port, no IPv6 brackets), lower-cased. */
export function hostNameOf(header: string): string {
  const value = header.trim().toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end < 0 ? value : value.slice(1, end);
  }
  const colon = value.indexOf(':');
  // More than one colon and no brackets: a bare IPv6 address, no port.
  return colon >= 0 && value.indexOf(':', colon + 1) < 0 ? value.slice(0, colon) : value;
}

const isLocalName = (name: string): boolean => name === 'localhost' || name.endsWith('.localhost') || name === 'localhost.';

/** The hosts a dev peer on loopback answers to, beyond loopback addresses and `localhost`; null: no check (tokens on, or a network address). */
export function allowedHostsOf(config: Pick<RegistryConfig, 'host' | 'security' | 'self' | 'seeds'>): ReadonlySet<string> | null {
  if (config.security.tokens.length > 0) return null;
  const listen = hostNameOf(config.host);
  if (!isLoopback(listen) && !isLocalName(listen)) return null;
  const hosts = new Set([listen]);
  for (const peer of [config.self, ...config.seeds]) {
    try {
      hosts.add(hostNameOf(new URL(peer.url).host));
    } catch {
      // A peer URL that does not parse was refused when the config was loaded.
    }
  }
  return hosts;
}

/** Whether a request with this `Host` header may be served; a request without one (HTTP/1.0) is. Pure. */
export function hostAllowed(allowed: ReadonlySet<string>, header: string | undefined): boolean {
  if (header === undefined) return true;
  const name = hostNameOf(header);
  return isLoopback(name) || isLocalName(name) || allowed.has(name);
}

/** Most allowed `Host` values remembered as they were sent (a peer sees a handful: its names with their port). */
const REMEMBERED_HOSTS_MAX = 64;

/**
 * `hostAllowed` for every request of one app: the `Host` values already allowed are remembered
 * as sent, so the hot path (a discover answered before fastify) costs one set lookup, not a parse.
 * Only allowed values are kept, and at most 64 of them: a flood of odd names is parsed each time.
 */
export class HostCheck {
  private readonly seen = new Set<string>();

  constructor(private readonly allowed: ReadonlySet<string>) {}

  allows(header: string | undefined): boolean {
    if (header === undefined || this.seen.has(header)) return true;
    if (!hostAllowed(this.allowed, header)) return false;
    if (this.seen.size < REMEMBERED_HOSTS_MAX) this.seen.add(header);
    return true;
  }
}

/** A dev peer on loopback's check (`allowedHostsOf`), or null when it needs none. */
export function hostCheckOf(config: Parameters<typeof allowedHostsOf>[0]): HostCheck | null {
  const allowed = allowedHostsOf(config);
  return allowed === null ? null : new HostCheck(allowed);
}

/** The refusal: which host, why, and what to do. */
export function hostRefusal(header: string): RegistryError {
  return new RegistryError(
    'REG_ERR_HOST_NOT_ALLOWED',
    `Host ${header.slice(0, 128)} does not name this peer: a dev peer (no security.tokens) listening on loopback answers only requests for ` +
      'localhost, a loopback address or its configured host, so that a web page cannot reach it through DNS rebinding; ' +
      'use http://127.0.0.1:<port>, or configure security.tokens',
  );
}
