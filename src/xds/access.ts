import { status, type Metadata } from '@grpc/grpc-js';
import type { Clock } from '../clock/clock.js';
import type { XdsConfig } from '../config/protocols.js';
import type { TokenGrant } from '../config/security.js';
import { ClientRateLimits, type RateLimitSettings } from '../http/access/rate-limit.js';
import { HeldShares, principalCapOf, shareOwnerOf } from '../security/held-shares.js';
import { hasNamespace, hasScope, presentedToken, TokenTable, type Principal } from '../security/tokens.js';
import { StreamRefusal, type StreamAccess } from './stream.js';

/**
 * Who may open an ADS stream and what it reads: the registry's client tokens with the rules of
 * `/v1` (src/security/tokens.ts), presented in the call's gRPC metadata as
 * `authorization: Bearer <token>`. With no token configured (dev mode) every stream reads every
 * exposed namespace. With tokens, a stream needs a valid token with the `read` scope and reads
 * the exposed namespaces its token may use; one without a token is refused (UNAUTHENTICATED)
 * unless `xds.allowAnonymous`, which serves it `xds.namespaces` (most gRPC xDS clients cannot
 * send a token to their control plane). An invalid token is always refused.
 *
 * Streams are held slots: a cap for the listener (`xds.streamsMax`) and a share per principal
 * (`xds.streamSharePerPrincipalRatio`; a token, or the address of a stream without one),
 * refused with RESOURCE_EXHAUSTED. Requests on streams count against the rate limits of `/v1`
 * (`limits.rateLimit*`, per token or address; a table of this listener's own).
 */

export interface XdsAccessInit {
  tokens: readonly TokenGrant[];
  xds: Pick<XdsConfig, 'namespaces' | 'allowAnonymous' | 'streamsMax' | 'streamSharePerPrincipalRatio'>;
  limits: RateLimitSettings;
}

/** What a call shows of its client: its metadata and its peer address (`getPeer()`, `ip:port`). */
export interface CallIdentity {
  metadata?: Metadata;
  getPeer?(): string;
}

/** An admitted stream: what it may read, how its requests are rate-limited, and its slot to give back. */
export interface AdmittedStream {
  access: StreamAccess;
  /** The refusal for one more request of this stream, if its principal sent too many. */
  checkRate(): StreamRefusal | undefined;
  release(): void;
}

/** The address in grpc-js's `getPeer()` (`10.0.0.7:5012`, `::1:5012`, or `unknown`). */
export function addressOfPeer(peer: string): string {
  const colon = peer.lastIndexOf(':');
  const host = colon > 0 && /^\d+$/.test(peer.slice(colon + 1)) ? peer.slice(0, colon) : peer;
  return host.replace(/^\[|\]$/g, '');
}

export class XdsAccess {
  private readonly tokens: TokenTable;
  private readonly streams: HeldShares;
  private readonly rates: ClientRateLimits;

  constructor(
    clock: Clock,
    private readonly init: XdsAccessInit,
  ) {
    this.tokens = new TokenTable(init.tokens);
    const { streamsMax, streamSharePerPrincipalRatio } = init.xds;
    this.streams = new HeldShares({ what: 'xDS streams', peerSetting: 'xds.streamsMax', peerMax: streamsMax, principalMax: principalCapOf(streamsMax, streamSharePerPrincipalRatio) });
    this.rates = new ClientRateLimits(clock, init.limits);
  }

  /** True when a stream without a token is served (dev mode, or `xds.allowAnonymous`). */
  get servesAnonymous(): boolean {
    return !this.tokens.enabled || this.init.xds.allowAnonymous;
  }

  /** Streams held now. */
  get held(): number {
    return this.streams.held;
  }

  /** Admits a new stream, or answers why not (the call then ends with the refusal's code). */
  admit(call: CallIdentity): AdmittedStream | StreamRefusal {
    const address = addressOfPeer(call.getPeer?.() ?? 'unknown');
    const principal = this.principalOf(call, address);
    if (principal instanceof StreamRefusal) return principal;
    const tokenName = principal?.name;
    const rate = this.rates.check(address, tokenName);
    if (rate) return new StreamRefusal(status.RESOURCE_EXHAUSTED, rate.message);
    const owner = shareOwnerOf(address, tokenName);
    const slot = this.streams.take(owner);
    if (!slot.held) return new StreamRefusal(status.RESOURCE_EXHAUSTED, slot.message);
    const exposed = this.init.xds.namespaces;
    const sees = principal === undefined ? (namespace: string) => exposed.includes(namespace) : (namespace: string) => exposed.includes(namespace) && hasNamespace(principal, namespace);
    return {
      access: { owner, sees },
      checkRate: () => {
        const refusal = this.rates.check(address, tokenName);
        return refusal ? new StreamRefusal(status.RESOURCE_EXHAUSTED, refusal.message) : undefined;
      },
      release: () => slot.release(),
    };
  }

  /** The stream's principal: undefined for a stream served without one, or the refusal. */
  private principalOf(call: CallIdentity, address: string): Principal | undefined | StreamRefusal {
    if (!this.tokens.enabled) return undefined;
    const header = call.metadata?.get('authorization')[0];
    const token = typeof header === 'string' ? presentedToken(header, false) : undefined;
    if (token === undefined) {
      if (this.init.xds.allowAnonymous) return undefined;
      // Counted like /v1 counts a request without credentials, so guessing costs the guesser.
      this.rates.check(address);
      return new StreamRefusal(status.UNAUTHENTICATED, 'this registry needs a token: send the gRPC metadata "authorization: Bearer <token>" (or set xds.allowAnonymous to serve clients that cannot)');
    }
    const principal = this.tokens.authenticate(token);
    if (principal === undefined) {
      this.rates.check(address);
      return new StreamRefusal(status.UNAUTHENTICATED, 'unknown token (authorization metadata); check the token the client sends');
    }
    if (!hasScope(principal, 'read')) return new StreamRefusal(status.PERMISSION_DENIED, `token ${principal.name} does not have the read scope`);
    return principal;
  }
}
