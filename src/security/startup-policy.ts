import { isIP } from 'node:net';
import type { RegistryConfig } from '../config/load.js';

/**
 * Safe by default: what a peer does at start given where it listens and what authentication
 * it has. On a loopback address it always starts (no authentication is dev mode, said in
 * one warning line). On any other address it starts only when both the client routes
 * (tokens) and the peer routes (cluster secret or mTLS) are guarded; otherwise it refuses
 * (exit 2), unless started with `--insecure`, which it then says at every start. A partial
 * configuration is refused too: an open peer route lets anyone write any record, and open
 * client routes let anyone redirect any service.
 */

export interface StartupFacts {
  host: string;
  /** At least one client token is configured. */
  clientAuth: boolean;
  /** A cluster secret or peer mTLS is configured. */
  peerAuth: boolean;
  /** The server speaks TLS. */
  tls: boolean;
  insecure: boolean;
}

export type StartupDecision =
  | { start: true; warnings: string[] }
  | { start: false; reason: string };

/** The facts of a configuration. */
export function startupFacts(config: RegistryConfig): StartupFacts {
  const { security } = config;
  return {
    host: config.host,
    clientAuth: security.tokens.length > 0,
    peerAuth: security.clusterSecret !== null || security.peerMtls,
    tls: config.tls.certFile !== null,
    insecure: security.insecure,
  };
}

/** True for 127.0.0.0/8, ::1 (also IPv4-mapped) and `localhost`. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || /^::ffff:127\./.test(bare) || /^0*:0*:0*:0*:0*:0*:0*:0*1$/.test(bare);
  return false;
}

/** What is unguarded, in words, for messages. */
function openParts(facts: StartupFacts): string {
  const parts = [];
  if (!facts.clientAuth) parts.push('the client routes are open (no security.tokens / REGISTRY_TOKENS)');
  if (!facts.peerAuth) parts.push('the peer routes are open (no security.clusterSecret / REGISTRY_CLUSTER_SECRET, no security.peerMtls)');
  return parts.join(' and ');
}

/** Decides whether to start, and what to warn about. Pure. */
export function decideStartup(facts: StartupFacts): StartupDecision {
  const guarded = facts.clientAuth && facts.peerAuth;
  const warnings: string[] = [];
  if (isLoopback(facts.host)) {
    if (!facts.clientAuth && !facts.peerAuth) {
      warnings.push(`dev mode: no authentication on ${facts.host}; anyone on this machine can read and write the registry (never expose it like this)`);
    } else if (!guarded) {
      warnings.push(`partly open on ${facts.host}: ${openParts(facts)}; anyone on this machine can use them`);
    }
    return { start: true, warnings };
  }
  if (!guarded) {
    if (!facts.insecure) {
      return {
        start: false,
        reason:
          `refusing to listen on ${facts.host}: ${openParts(facts)}. ` +
          'Configure client tokens and peer authentication (docs/security.md), listen on 127.0.0.1, ' +
          'or start with --insecure (REGISTRY_INSECURE=true) to run open on purpose.',
      };
    }
    warnings.push(`--insecure: listening on ${facts.host} while ${openParts(facts)}; anyone who reaches this port can change where traffic goes`);
  }
  if (guarded && !facts.tls) {
    warnings.push(`no TLS on ${facts.host}: bearer tokens travel in clear text; serve TLS (tls.certFile) or put a TLS proxy in front`);
  }
  return { start: true, warnings };
}
