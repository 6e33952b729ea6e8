import type { FastifyRequest } from 'fastify';
import type { RegistryConfig } from '../config/load.js';
import type { Scope } from '../config/security.js';
import type { ClientRateLimits } from '../http/access/rate-limit.js';
import { RegistryError } from '../errors.js';
import { ANONYMOUS, hasNamespace, hasScope, presentedToken, TokenTable, type Principal } from '../security/tokens.js';
import { badRequest, ConsulError } from './errors.js';

/**
 * Who may do what on the Consul API: the same client tokens, scopes and namespaces as `/v1`
 * (src/security/tokens.ts), presented the ways Consul clients present an ACL token: the
 * `X-Consul-Token` header, `Authorization: Bearer <token>`, or the older `?token=` (which
 * python-consul still sends). With no token configured every call is open (dev mode), as on
 * `/v1`. Refusals are Consul's: 403 with `ACL not found` for an unknown token and
 * `Permission denied` for a missing scope or namespace, since Consul clients treat 403 as the
 * ACL answer (and have no 401). Consul's namespace (`?ns=` or `X-Consul-Namespace`) is ours;
 * a request that names none uses the first of `consul.namespaces`.
 */
export class ConsulAccess {
  private readonly tokens: TokenTable;
  private readonly namespaces: readonly string[];
  private readonly rates: ClientRateLimits;

  /** `rates`: the peer's one rate limiter (`node.ports.limits.rates`), so a token has one budget on /v1 and Consul together. */
  constructor(config: RegistryConfig, rates: ClientRateLimits) {
    this.tokens = new TokenTable(config.security.tokens);
    this.namespaces = config.protocols.consul.namespaces;
    this.rates = rates;
  }

  /** The token a request presents, if any. */
  private tokenOf(request: FastifyRequest): string | undefined {
    const header = request.headers['x-consul-token'];
    if (typeof header === 'string' && header.length > 0) return header;
    const bearer = presentedToken(request.headers.authorization, false);
    if (bearer !== undefined) return bearer;
    const query = (request.query as Record<string, unknown>).token;
    return typeof query === 'string' && query.length > 0 ? query : undefined;
  }

  /** The principal of a request (anonymous in dev mode); throws 403 or 429. */
  private principal(request: FastifyRequest): Principal {
    let principal: Principal | undefined = ANONYMOUS;
    if (this.tokens.enabled) {
      const token = this.tokenOf(request);
      principal = token === undefined ? undefined : this.tokens.authenticate(token);
      if (token !== undefined && principal === undefined) {
        this.rateLimit(request.ip);
        throw new ConsulError(403, 'ACL not found');
      }
    }
    this.rateLimit(request.ip, principal && principal !== ANONYMOUS ? principal.name : undefined);
    if (!principal) throw new ConsulError(403, 'Permission denied: this registry needs a token (X-Consul-Token or Authorization: Bearer)');
    return principal;
  }

  /** A route open to any client (Consul's status routes need no ACL): only the rate limit applies. */
  open(request: FastifyRequest): void {
    this.rateLimit(request.ip);
  }

  /** The namespace a request reads or writes, once its principal may use it with `scope`. */
  authorize(request: FastifyRequest, scope: Scope): string {
    const principal = this.principal(request);
    if (!hasScope(principal, scope)) throw new ConsulError(403, `Permission denied: token ${principal.name} does not have the ${scope} scope`);
    const namespace = this.namespaceOf(request);
    if (!hasNamespace(principal, namespace)) throw new ConsulError(403, `Permission denied: token ${principal.name} may not use namespace ${namespace}`);
    return namespace;
  }

  private namespaceOf(request: FastifyRequest): string {
    const query = (request.query as Record<string, unknown>).ns;
    const header = request.headers['x-consul-namespace'];
    const named = typeof query === 'string' && query !== '' ? query : typeof header === 'string' && header !== '' ? header : undefined;
    if (named === undefined) return this.namespaces[0]!;
    if (!this.namespaces.includes(named)) {
      throw badRequest(`ns: namespace "${named.slice(0, 128)}" is not served by this Consul API (consul.namespaces: ${this.namespaces.join(', ')})`);
    }
    return named;
  }

  /** Counts a request (by its valid token, else its address): a 429 in plain text with /v1's message when over. */
  private rateLimit(address: string, tokenName?: string): void {
    const refusal: RegistryError | undefined = this.rates.check(address, tokenName);
    if (refusal) throw new ConsulError(429, refusal.message, refusal.retryAfterSeconds ?? 1);
  }
}
