import type { AccessPort, PresentedCredentials } from '../adapters/access.js';
import type { CredentialCarrier } from '../adapters/contract.js';
import type { LimitSubject } from '../adapters/limits.js';
import type { Scope } from '../config/security.js';
import { RegistryError } from '../errors.js';
import { rateNameOf } from '../http/access/client-auth.js';
import type { Principal } from '../security/tokens.js';

/** How long Nacos clients may reuse the `accessToken` of a login, in seconds (Nacos's default, 5 hours). */
export const TOKEN_TTL_SECONDS = 18_000;

/**
 * How Nacos clients carry a token (its line in LISTENER_ADAPTERS): `?accessToken=` (after a
 * login) or `?password=` (npm `nacos` sends its user and password on every call), in the query
 * or the form; or `Authorization: Bearer`. Over gRPC the same token comes in the request's
 * `headers.accessToken`.
 */
export const NACOS_CARRIERS: readonly CredentialCarrier[] = ['nacos-access-token', 'bearer'];

/** What a request was admitted as: its principal (undefined on an open call without a valid token) and whom the limits count. */
export interface NacosAdmission {
  principal: Principal | undefined;
  subject: LimitSubject;
}

/**
 * Who may do what on the Nacos API: the adapter contract's access port (the registry's tokens,
 * scopes and namespaces, and the peer's one rate limit, shared with /v1 and every other
 * protocol), with the token as Nacos clients present it: the `accessToken` a login answered
 * (the token itself, so it works on every peer and never expires before the token does), or
 * the `password`. The refusals are the contract's (401 no or unknown token, 403 scope or
 * namespace, 429 rate), answered in Nacos's shapes: HTTP status and `{code, message}` on v1,
 * an `ErrorResponse` with that status as `errorCode` over gRPC.
 */
export class NacosAccess {
  constructor(
    private readonly port: AccessPort,
    private readonly namespaces: readonly string[],
  ) {}

  /** True when tokens are configured (a login then needs one). */
  get enabled(): boolean {
    return this.port.enabled;
  }

  /**
   * Admits a request: counts it against the peer's rate limit, then (`scope` not null) checks
   * its token may use `namespace` with `scope` and that this listener serves the namespace.
   * Throws the contract's refusal.
   */
  admit(credentials: PresentedCredentials, scope: Scope | null, namespace?: string): NacosAdmission {
    const decision = this.port.admit(credentials, { scope, namespaces: namespace === undefined ? [] : [namespace] }, NACOS_CARRIERS);
    if (!decision.allowed) throw decision.error;
    if (namespace !== undefined && !this.namespaces.includes(namespace)) {
      throw new RegistryError('REG_ERR_VALIDATION', `namespaceId: namespace ${namespace.slice(0, 128)} is not served by this Nacos API (nacos.namespaces: ${this.namespaces.join(', ')}; Nacos's public is default)`);
    }
    return { principal: decision.principal, subject: decision.subject };
  }

  /** Whom the limits count for these credentials (a valid token's name, else the address), without counting a request. */
  subjectOf(credentials: PresentedCredentials): LimitSubject {
    return { address: credentials.address, tokenName: rateNameOf(this.port.principalOf(credentials, NACOS_CARRIERS)) };
  }

  /** A login: the principal of the password (rate limited first), or the contract's 401 for a password that is no token. */
  login(credentials: PresentedCredentials): Principal | undefined {
    this.admit(credentials, null);
    if (!this.port.enabled) return undefined;
    const principal = this.port.principalOf(credentials, NACOS_CARRIERS);
    if (principal === undefined) {
      throw new RegistryError('REG_ERR_UNAUTHORIZED', 'unknown user or password: the password must be a registry token (docs/nacos.md, Credentials)');
    }
    return principal;
  }
}
