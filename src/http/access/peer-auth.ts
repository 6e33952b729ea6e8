import type { Clock } from '../../clock/clock.js';
import type { SecurityConfig } from '../../config/security.js';
import { RegistryError } from '../../errors.js';
import type { Logger } from '../../log/logger.js';
import { readClaim, verifySignature, type PeerClaim, type SignedParts } from '../../security/peer-signature.js';
import { ReplayGuard } from '../../security/replay-guard.js';

/**
 * Peer authentication on the peer routes: a verified peer certificate (mTLS), or a call
 * signed with the cluster secret, checked in two steps: its headers (shape, timestamp within
 * the replay window, nonce not seen) before the body is read, then the HMAC over the body's
 * digest and the nonce taken once the last byte is in. The signature, the replay window and
 * the nonce cache are src/security/; this file holds the order of the checks and the words
 * of each refusal. No fastify here: the guard hands in the socket's and headers' facts.
 */

/** The settings peer authentication reads (`security.*`). */
export type PeerAuthSettings = Pick<SecurityConfig, 'clusterSecret' | 'peerMtls' | 'peerReplayWindowMs' | 'peerNonceMax'>;

/** How often one kind of refused peer request is logged at warn (the rest go to debug). */
export const PEER_WARN_INTERVAL_MS = 10_000;

/** A TLS socket's certificate facts (`encrypted`, `authorized`); a plain socket has neither. */
export interface SocketFacts {
  encrypted?: boolean;
  authorized?: boolean;
}

/** A peer certificate verified against the configured CA (mTLS). */
export function hasVerifiedCertificate(socket: SocketFacts): boolean {
  return socket.encrypted === true && socket.authorized === true;
}

/** The answer to a refused peer call: 401, saying why (never echoing a secret). */
export function peerRefusedError(why: string): RegistryError {
  return new RegistryError('REG_ERR_UNAUTHORIZED', `peer authentication failed: ${why}`);
}

/** The answer when the nonce cache is full of nonces still in their window: 429, the peer backs off. */
export function replayCacheFullError(): RegistryError {
  return new RegistryError('REG_ERR_RATE_LIMITED', 'too many signed peer requests within the replay window; retry shortly', 1);
}

/** The outcome of verifying a signed call's body: `verified`, `full` (429) or why it is refused (401). */
export type PeerVerification = 'verified' | 'full' | { refused: string };

/** The cluster secret and the replay cache of this peer. */
export class PeerAuth {
  private readonly replay: ReplayGuard;

  constructor(
    private readonly clock: Clock,
    private readonly settings: PeerAuthSettings,
  ) {
    this.replay = new ReplayGuard(clock, { windowMs: settings.peerReplayWindowMs, maxNonces: settings.peerNonceMax });
  }

  /** Peer routes need authentication (a cluster secret or mTLS); without either they are open. */
  get enabled(): boolean {
    return this.settings.clusterSecret !== null || this.settings.peerMtls;
  }

  /** A call on a socket whose verified certificate (with `peerMtls`) is all the authentication it needs. */
  acceptsCertificate(socket: SocketFacts): boolean {
    return this.settings.peerMtls && hasVerifiedCertificate(socket);
  }

  /**
   * The first step, before the body is read: the claim of the signing headers when they are
   * well formed, on time and with a nonce not seen; otherwise why the call is refused.
   */
  admitSigned(headers: Record<string, string | string[] | undefined>): PeerClaim | string {
    const { clusterSecret, peerReplayWindowMs } = this.settings;
    if (clusterSecret === null) return 'peer routes need a peer certificate signed by the cluster CA';
    const claim = readClaim(headers);
    if (typeof claim === 'string') return claim;
    if (this.replay.freshness(claim.timestampMs) !== 'fresh') {
      const offsetMs = claim.timestampMs - this.clock.nowMs();
      return `timestamp: ${offsetMs} ms from this peer's clock, outside the replay window of ${peerReplayWindowMs} ms (check the clocks)`;
    }
    if (this.replay.seen(claim.nonce)) return 'replayed: this nonce was already used';
    return claim;
  }

  /**
   * The second step, once the body's digest is known: the HMAC over the call, then its nonce
   * taken (atomically with the replay check, so two copies in flight cannot both pass).
   */
  verify(claim: PeerClaim, call: Pick<SignedParts, 'method' | 'path' | 'bodySha256'>): PeerVerification {
    const secret = this.settings.clusterSecret;
    if (secret === null) return { refused: 'no signature to verify' };
    if (!verifySignature(secret, { ...call, ...claim }, claim.signature)) {
      return { refused: 'bad signature (wrong cluster secret, or a tampered request)' };
    }
    const outcome = this.replay.remember(claim.nonce);
    if (outcome === 'replayed') return { refused: 'replayed: this nonce was already used' };
    return outcome === 'full' ? 'full' : 'verified';
  }
}

/** The kind of a refusal, for throttling its log: what comes before the first `:` of why. */
export function refusalKindOf(why: string): string {
  return why.split(':')[0] ?? why;
}

/** Whether a refusal whose kind was last logged at warn at `lastWarnMs` goes to warn now. Pure. */
export function warnsNow(lastWarnMs: number | undefined, nowMs: number, intervalMs: number): boolean {
  return nowMs - (lastWarnMs ?? -Infinity) >= intervalMs;
}

/**
 * The log of refused peer calls: the first of each kind in `PEER_WARN_INTERVAL_MS` at warn
 * (an operator sees a wrong secret or skewed clocks at once), the rest at debug (a flood of
 * forged calls cannot flood the log).
 */
export class PeerRefusalLog {
  private readonly lastWarnMs = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  record(fields: { address: string; peer: string | string[] | undefined; why: string }): void {
    const nowMs = this.clock.nowMs();
    const kind = refusalKindOf(fields.why);
    if (warnsNow(this.lastWarnMs.get(kind), nowMs, PEER_WARN_INTERVAL_MS)) {
      this.lastWarnMs.set(kind, nowMs);
      this.log.warn(fields, 'peer request refused');
    } else {
      this.log.debug(fields, 'peer request refused');
    }
  }
}
