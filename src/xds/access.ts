import { status, type Metadata } from '@grpc/grpc-js';
import type { AccessDecision, AccessPort } from '../adapters/access.js';
import type { CredentialCarrier } from '../adapters/contract.js';
import type { LimitsPort, LimitSubject } from '../adapters/limits.js';
import type { XdsConfig } from './declaration.js';
import type { HeldShares } from '../security/held-shares.js';
import type { AdapterMetrics } from '../metrics/adapter-metrics.js';
import { hasNamespace, type Principal } from '../security/tokens.js';
import { StreamRefusal, type StreamAccess } from './stream.js';

/**
 * Who may open an ADS stream and what it reads, through the adapter contract's ports
 * (src/adapters): the access port turns the gRPC metadata `authorization: Bearer <token>` into a
 * principal by the rules of `/v1` (the same tokens, scopes and namespaces, counted against the
 * peer's one rate limit), the limits port holds each stream in the peer's pool of xDS streams
 * with a share per principal (`limits.heldSharePerPrincipalRatio`). With no token configured
 * (dev mode) every stream reads every exposed namespace. With tokens a stream needs a valid
 * token with the `read` scope (UNAUTHENTICATED, PERMISSION_DENIED) and reads the exposed
 * namespaces its token may use; one without a token is refused unless `xds.allowAnonymous`,
 * which serves it `xds.namespaces` (most gRPC xDS clients cannot send a token to their
 * control plane). An unknown token is always refused.
 */

/** How xDS carries credentials (the access port words a refusal's message from it). */
export const XDS_CARRIERS: readonly CredentialCarrier[] = ['grpc-authorization'];

/** The ports the listener takes its access and limits from. */
export interface XdsAccessPorts {
  access: AccessPort;
  limits: LimitsPort;
  /** The contract's metrics port (contract.ts); none: recorded into a detached one. */
  metrics?: AdapterMetrics;
}

export type XdsAccessInit = Pick<XdsConfig, 'namespaces' | 'allowAnonymous' | 'streamsMax'>;

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

/** The gRPC status of an access refusal: 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 429 RESOURCE_EXHAUSTED. */
export function refusalOf(decision: Extract<AccessDecision, { allowed: false }>): StreamRefusal {
  const code = decision.status === 401 ? status.UNAUTHENTICATED : decision.status === 403 ? status.PERMISSION_DENIED : status.RESOURCE_EXHAUSTED;
  return new StreamRefusal(code, decision.error.message);
}

export class XdsAccess {
  private readonly streams: HeldShares;

  constructor(
    private readonly ports: XdsAccessPorts,
    private readonly init: XdsAccessInit,
  ) {
    this.streams = ports.limits.pool('xDS streams', init.streamsMax, 'xds.streamsMax');
  }

  /** True when a stream without a token is served (dev mode, or `xds.allowAnonymous`). */
  get servesAnonymous(): boolean {
    return !this.ports.access.enabled || this.init.allowAnonymous;
  }

  /** Streams held now. */
  get held(): number {
    return this.streams.held;
  }

  /** The peer's pool of xDS streams (the metrics read it at scrape time). */
  get pool(): HeldShares {
    return this.streams;
  }

  /** Admits a new stream, or answers why not (the call then ends with the refusal's code). */
  admit(call: CallIdentity): AdmittedStream | StreamRefusal {
    const address = addressOfPeer(call.getPeer?.() ?? 'unknown');
    const header = call.metadata?.get('authorization')[0];
    const authorization = typeof header === 'string' ? header : undefined;
    // Without a token and with allowAnonymous, the stream is an open operation (rate limited only).
    const open = authorization === undefined && this.init.allowAnonymous;
    const decision = this.ports.access.admit({ address, authorization }, { scope: open ? null : 'read', namespaces: [] }, XDS_CARRIERS);
    if (!decision.allowed) return refusalOf(decision);
    const slot = this.ports.limits.hold(this.streams, decision.subject);
    if (!slot.held) return new StreamRefusal(status.RESOURCE_EXHAUSTED, slot.message, slot.cap);
    return { access: this.streamAccess(decision.principal, decision.subject), checkRate: () => this.checkRate(decision.subject), release: () => slot.release() };
  }

  private streamAccess(principal: Principal | undefined, subject: LimitSubject): StreamAccess {
    const exposed = this.init.namespaces;
    const owner = subject.tokenName !== undefined ? `token:${subject.tokenName}` : `address:${subject.address}`;
    if (principal === undefined || principal.namespaces === '*') return { owner, sees: (namespace) => exposed.includes(namespace), restrictedTo: null };
    return { owner, sees: (namespace) => exposed.includes(namespace) && hasNamespace(principal, namespace), restrictedTo: principal.name };
  }

  private checkRate(subject: LimitSubject): StreamRefusal | undefined {
    const limited = this.ports.limits.rate(subject);
    return limited ? new StreamRefusal(status.RESOURCE_EXHAUSTED, limited.message) : undefined;
  }
}
