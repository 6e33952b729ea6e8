import type { Clock } from '../clock/clock.js';
import type { RegistryConfig } from '../config/load.js';
import type { Scope } from '../config/security.js';
import { RegistryError } from '../errors.js';
import { ClientRateLimits } from '../http/access/rate-limit.js';
import { ANONYMOUS, hasNamespace, hasScope, TokenTable, type Principal } from '../security/tokens.js';

/** How long Nacos clients may reuse the `accessToken` of a login, in seconds (Nacos's default, 5 hours). */
export const TOKEN_TTL_SECONDS = 18_000;

/** What a Nacos request presents: its credential (if any) and its source address. */
export interface NacosCredentials {
  /** `accessToken` (after a login), or the `password` of a client that sends its user and password on each call. */
  token: string | undefined;
  address: string;
}

/**
 * Who may do what on the Nacos API: the registry's client tokens, scopes and namespaces
 * (src/security/tokens.ts), presented as Nacos clients present them: the `accessToken` a
 * login answered (which is the token itself, so it works on every peer and never expires
 * before the token does), or a `password` (npm `nacos` sends `username`/`password` on every
 * call). With no token configured every call is open, as on `/v1`. The rate limits are /v1's
 * (per token, or per address without one), in a table of this listener's own.
 */
export class NacosAccess {
  private readonly tokens: TokenTable;
  private readonly rates: ClientRateLimits;

  constructor(
    config: RegistryConfig,
    clock: Clock,
    private readonly namespaces: readonly string[],
  ) {
    this.tokens = new TokenTable(config.security.tokens);
    this.rates = new ClientRateLimits(clock, config.limits);
  }

  /** True when tokens are configured (a login then needs one). */
  get enabled(): boolean {
    return this.tokens.enabled;
  }

  /** The principal of a credential; throws 403 for a wrong one, 401-like 403 for none, 429 over the rate. */
  principal(credentials: NacosCredentials): Principal {
    if (!this.tokens.enabled) {
      this.rateLimit(credentials.address);
      return ANONYMOUS;
    }
    const principal = credentials.token === undefined ? undefined : this.tokens.authenticate(credentials.token);
    this.rateLimit(credentials.address, principal?.name);
    if (principal === undefined) {
      throw new RegistryError(
        credentials.token === undefined ? 'REG_ERR_UNAUTHORIZED' : 'REG_ERR_FORBIDDEN',
        credentials.token === undefined
          ? 'this registry needs a token: log in (POST /nacos/v1/auth/login, password = a registry token) or send accessToken'
          : 'unknown user or token (the password, or accessToken, must be a registry token)',
      );
    }
    return principal;
  }

  /** A request open to any client (metrics, server checks): only the rate limit applies. */
  open(address: string): void {
    this.rateLimit(address);
  }

  /** Checks that the credential may use `namespace` with `scope`, and that this listener serves it. */
  authorize(credentials: NacosCredentials, scope: Scope, namespace: string): Principal {
    const principal = this.principal(credentials);
    if (!this.namespaces.includes(namespace)) {
      throw new RegistryError('REG_ERR_VALIDATION', `namespaceId: namespace ${namespace.slice(0, 128)} is not served by this Nacos API (nacos.namespaces: ${this.namespaces.join(', ')}; Nacos's public is default)`);
    }
    if (!hasScope(principal, scope)) throw new RegistryError('REG_ERR_FORBIDDEN', `token ${principal.name} does not have the ${scope} scope`);
    if (!hasNamespace(principal, namespace)) throw new RegistryError('REG_ERR_FORBIDDEN', `token ${principal.name} may not use namespace ${namespace}`);
    return principal;
  }

  private rateLimit(address: string, tokenName?: string): void {
    const refusal = this.rates.check(address, tokenName);
    if (refusal) throw refusal;
  }
}
