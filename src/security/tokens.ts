import { createHash, timingSafeEqual } from 'node:crypto';
import { TOKEN_MAX_LENGTH, type Scope, type TokenGrant } from '../config/security.js';

/**
 * Client authentication: who a bearer token (or a Eureka client's basic password) is, and
 * what it may do. Only SHA-256 digests are held; a presented token is hashed and compared
 * with every digest in constant time, so neither the comparison nor the number of tokens
 * tried tells an attacker how close a guess came. Tokens never reach a log or a message.
 */

/** Who a request comes from, once authenticated. */
export interface Principal {
  /** The token's name (`anonymous` in dev mode, when no token is configured). */
  name: string;
  namespaces: ReadonlySet<string> | '*';
  scopes: ReadonlySet<Scope>;
}

/** Dev mode (no token configured): every scope on every namespace. */
export const ANONYMOUS: Principal = { name: 'anonymous', namespaces: '*', scopes: new Set(['read', 'write', 'admin']) };

interface HeldToken {
  digest: Buffer;
  principal: Principal;
}

/**
 * May `principal` act with `scope`? `write` implies `read` (a client that registers also
 * heartbeats and discovers); `admin` is its own scope and implies neither.
 */
export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes.has(scope) || (scope === 'read' && principal.scopes.has('write'));
}

/** May `principal` use `namespace`? */
export function hasNamespace(principal: Principal, namespace: string): boolean {
  return principal.namespaces === '*' || principal.namespaces.has(namespace);
}

/** The configured tokens, held as digests. */
export class TokenTable {
  private readonly held: HeldToken[];

  constructor(grants: readonly TokenGrant[]) {
    this.held = grants.map((grant) => ({
      digest: Buffer.from(grant.sha256, 'hex'),
      principal: {
        name: grant.name,
        namespaces: grant.namespaces === '*' ? '*' : new Set(grant.namespaces),
        scopes: new Set(grant.scopes),
      },
    }));
  }

  /** True when at least one token is configured: client routes then need one. */
  get enabled(): boolean {
    return this.held.length > 0;
  }

  /** The principal of a presented token, or undefined when it matches none. */
  authenticate(token: string): Principal | undefined {
    if (token.length === 0 || token.length > TOKEN_MAX_LENGTH) return undefined;
    const digest = createHash('sha256').update(token, 'utf8').digest();
    let found: Principal | undefined;
    // Compare with every digest, without stopping at a match: the time taken does not depend
    // on which token (if any) matched.
    for (const held of this.held) {
      if (timingSafeEqual(held.digest, digest) && found === undefined) found = held.principal;
    }
    return found;
  }
}

/**
 * The token in an `Authorization` header: `Bearer <token>`, or, where `basic` is allowed (the
 * Eureka API: Spring Cloud sends `http://user:token@host/eureka/`), `Basic base64(user:token)`
 * whose password is the token (the user name is ignored). Undefined when there is none.
 */
export function presentedToken(header: string | undefined, basic: boolean): string | undefined {
  if (header === undefined) return undefined;
  const space = header.indexOf(' ');
  if (space < 0) return undefined;
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (scheme === 'bearer') return value.length > 0 ? value : undefined;
  if (scheme === 'basic' && basic) {
    if (value.length > TOKEN_MAX_LENGTH * 2) return undefined;
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? undefined : decoded.slice(colon + 1) || undefined;
  }
  return undefined;
}
