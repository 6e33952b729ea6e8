import type { FastifyRequest } from 'fastify';
import type { AccessPort } from '../adapters/access.js';
import { httpCredentials } from '../adapters/access.js';
import type { CredentialCarrier } from '../adapters/contract.js';
import type { LimitSubject } from '../adapters/limits.js';
import type { RegistryConfig } from '../config/load.js';
import type { Scope } from '../config/security.js';
import { namespaceRefusal } from '../http/access/client-auth.js';
import { badRequest, ConsulError } from './errors.js';

/**
 * Who may do what on the Consul API, through the adapter contract's access port
 * (src/adapters/access.ts): the same client tokens, scopes, namespaces and ONE peer-wide rate
 * limit as `/v1` (a token has one budget on /v1 and Consul together), presented the ways
 * Consul clients present an ACL token: the `X-Consul-Token` header, `Authorization: Bearer
 * <token>`, or the older `?token=` (which python-consul still sends). With no token
 * configured every call is open (dev mode), as on `/v1`. Refusals are Consul's: 403 with
 * `ACL not found` for an unknown token and `Permission denied` for a missing token, scope or
 * namespace, since Consul clients treat 403 as the ACL answer (and have no 401). Consul's
 * namespace (`?ns=` or `X-Consul-Namespace`) is ours; a request that names none uses the
 * first of `consul.namespaces`.
 */
export const CONSUL_CREDENTIALS: readonly CredentialCarrier[] = ['x-consul-token', 'bearer', 'query-token'];

/** What a request was admitted as: its namespace and whom the limits count (held-query shares). */
export interface ConsulGrant {
  namespace: string;
  subject: LimitSubject;
}

export class ConsulAccess {
  private readonly namespaces: readonly string[];

  constructor(
    config: Pick<RegistryConfig, 'protocols'>,
    private readonly port: Pick<AccessPort, 'admit'>,
  ) {
    this.namespaces = config.protocols.consul.namespaces;
  }

  /** Admits a request for `scope` (null: open, only rate limited); throws Consul's 403 or 429 otherwise. */
  private admit(request: FastifyRequest, scope: Scope | null) {
    const decision = this.port.admit(httpCredentials(request, CONSUL_CREDENTIALS), { scope, namespaces: [] }, CONSUL_CREDENTIALS);
    if (decision.allowed) return decision;
    if (decision.reason === 'rate') throw new ConsulError(429, decision.error.message, decision.error.retryAfterSeconds ?? 1);
    // Consul's clients know no 401: the metrics still count these as unauthenticated.
    if (decision.reason === 'unknown-credentials') throw new ConsulError(403, 'ACL not found', undefined, undefined, 'unauthenticated');
    if (decision.reason === 'no-credentials') {
      throw new ConsulError(403, 'Permission denied: this registry needs a token (X-Consul-Token or Authorization: Bearer)', undefined, undefined, 'unauthenticated');
    }
    throw new ConsulError(403, `Permission denied: ${decision.error.message}`);
  }

  /** A route open to any client (Consul's `status/leader` needs no ACL): only the rate limit applies. */
  open(request: FastifyRequest): void {
    this.admit(request, null);
  }

  /**
   * The namespace a request reads or writes, once its principal may use it with `scope`, and
   * whom the limits count. `admin` routes tell about the cluster, not a namespace (as /v1/cluster).
   */
  authorize(request: FastifyRequest, scope: Scope): ConsulGrant {
    const decision = this.admit(request, scope);
    if (scope === 'admin') return { namespace: this.namespaces[0]!, subject: decision.subject };
    const namespace = this.namespaceOf(request);
    const refusal = decision.principal ? namespaceRefusal(decision.principal, [namespace]) : undefined;
    if (refusal) throw new ConsulError(403, `Permission denied: ${refusal.message}`);
    return { namespace, subject: decision.subject };
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
}
