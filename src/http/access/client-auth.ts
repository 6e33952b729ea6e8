import type { TokenGrant } from '../../config/security.js';
import { RegistryError } from '../../errors.js';
import { DEFAULT_NAMESPACE } from '../../registry/validate.js';
import { ANONYMOUS, hasNamespace, hasScope, presentedToken, TokenTable, type Principal } from '../../security/tokens.js';
import { scopeOf, type AccessClass } from '../access-policy.js';

/**
 * Client authentication on the HTTP API: who a request's `Authorization` header is (a bearer
 * token, or on the Eureka routes HTTP basic with the token as password), whether its scope
 * lets it call the route, and whether it may use the namespaces the request names. The token
 * table and the scope and namespace rules are src/security/tokens.ts; this file turns the
 * facts of a request into the HTTP answer (401 with its challenge, or 403). No fastify here:
 * the guard (access-guard.ts) hands in the header, the query and the body.
 */

/** The access classes a client (not a peer) calls. */
export type ClientAccessClass = Exclude<AccessClass, 'peer'>;

/** The Eureka classes take HTTP basic too (Spring Cloud sends `http://user:token@host/eureka/`). */
export function isEurekaClass(access: AccessClass): boolean {
  return access === 'eureka-read' || access === 'eureka-write';
}

/**
 * Classes whose requests name namespaces that the token must hold: all but `public`, `admin`
 * (operator routes span namespaces) and `peer` (no client token).
 */
export function isNamespaceBound(access: AccessClass | undefined): boolean {
  return access !== undefined && access !== 'peer' && access !== 'public' && access !== 'admin';
}

/** The `WWW-Authenticate` challenge of a 401: basic where basic is accepted, else bearer. */
export function challengeOf(access: ClientAccessClass): string {
  return isEurekaClass(access) ? 'Basic realm="registry", charset="UTF-8"' : 'Bearer realm="registry"';
}

/** What the guard knows of a client request once its credentials are looked up. */
export interface ClientFacts {
  access: ClientAccessClass;
  /** At least one token is configured (otherwise dev mode: every route is open). */
  tokensEnabled: boolean;
  /** The credentials' principal: undefined when none were sent or they match no token. */
  principal: Principal | undefined;
  /** An `Authorization` header was sent (for the message: none, or a wrong one). */
  credentialsSent: boolean;
}

export type ClientVerdict =
  /** `principal` is set when the request is bound by it (its namespaces are checked later). */
  | { allowed: true; principal?: Principal }
  | { allowed: false; error: RegistryError; challenge?: string };

const OPEN: ClientVerdict = { allowed: true };

/** May this client request call its route? Pure: 401 (with a challenge) without valid credentials, 403 without the scope. */
export function clientVerdict(facts: ClientFacts): ClientVerdict {
  const { access, principal } = facts;
  if (access === 'public' || !facts.tokensEnabled) return OPEN;
  if (!principal) {
    const what = facts.credentialsSent ? 'the credentials match no token' : 'no credentials';
    const how = `send Authorization: Bearer <token>${isEurekaClass(access) ? ' (or HTTP basic with the token as password)' : ''}`;
    return { allowed: false, challenge: challengeOf(access), error: new RegistryError('REG_ERR_UNAUTHORIZED', `${what}: ${how}`) };
  }
  const scope = scopeOf(access);
  if (scope !== undefined && !hasScope(principal, scope)) {
    return { allowed: false, error: new RegistryError('REG_ERR_FORBIDDEN', `token ${principal.name} does not have the ${scope} scope`) };
  }
  return { allowed: true, principal };
}

/**
 * Every namespace a client request names: on the Eureka routes the configured Eureka
 * namespace; elsewhere `?namespace=` (repeated or not) and a body's `namespace`, or the
 * default namespace when it names none.
 */
export function namespacesNamed(access: ClientAccessClass, query: unknown, body: unknown, eurekaNamespace: string): string[] {
  if (isEurekaClass(access)) return [eurekaNamespace];
  const names: string[] = [];
  const fromQuery = ((query ?? {}) as Record<string, unknown>).namespace;
  for (const value of [fromQuery].flat()) if (typeof value === 'string') names.push(value);
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const fromBody = (body as Record<string, unknown>).namespace;
    if (typeof fromBody === 'string') names.push(fromBody);
  }
  return names.length === 0 ? [DEFAULT_NAMESPACE] : names;
}

/** The 403 for the first of `namespaces` the principal may not use, if any. Pure. */
export function namespaceRefusal(principal: Principal, namespaces: readonly string[]): RegistryError | undefined {
  for (const namespace of namespaces) {
    if (!hasNamespace(principal, namespace)) {
      return new RegistryError('REG_ERR_FORBIDDEN', `token ${principal.name} may not use namespace ${namespace.slice(0, 128)}`);
    }
  }
  return undefined;
}

/** The name a principal is rate limited by: a real token's; none for dev mode's anonymous (limited by address). */
export function rateNameOf(principal: Principal | undefined): string | undefined {
  return principal && principal !== ANONYMOUS ? principal.name : undefined;
}

/** The configured client tokens, and the lookup of a request's credentials against them. */
export class ClientAuth {
  private readonly tokens: TokenTable;

  constructor(grants: readonly TokenGrant[]) {
    this.tokens = new TokenTable(grants);
  }

  /** True when at least one token is configured: client routes then need one. */
  get enabled(): boolean {
    return this.tokens.enabled;
  }

  /**
   * Who the `Authorization` header is: anonymous (every scope) in dev mode, undefined when it
   * presents no token or one that matches none.
   */
  principalOf(authorization: string | undefined, access: ClientAccessClass): Principal | undefined {
    if (!this.tokens.enabled) return ANONYMOUS;
    const token = presentedToken(authorization, isEurekaClass(access));
    return token === undefined ? undefined : this.tokens.authenticate(token);
  }
}
