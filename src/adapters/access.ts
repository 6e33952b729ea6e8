import type { Scope, TokenGrant } from '../config/security.js';
import { RegistryError } from '../errors.js';
import { namespaceRefusal, rateNameOf } from '../http/access/client-auth.js';
import { ANONYMOUS, hasScope, presentedToken, TokenTable, type Principal } from '../security/tokens.js';
import type { CredentialCarrier } from './contract.js';
import type { LimitSubject, LimitsPort } from './limits.js';

/**
 * The access port of the adapter contract (contract.ts): turns the credentials a protocol
 * carries into a principal with scopes and namespaces, by the very rules of /v1 (the same
 * TokenTable, the same scope and namespace checks, the same peer-wide rate limit, in the
 * guard's order: who, how often, what for). The answer is data: allowed, or refused with the
 * reason, the HTTP status /v1 would answer and a message that says what to do; each adapter
 * words a refusal in its own protocol (Consul: 403 `ACL not found`; gRPC: UNAUTHENTICATED or
 * PERMISSION_DENIED; DNS: REFUSED). No framework here: the adapter hands in what it read.
 */

/** Credentials as a request presents them; the adapter fills what its protocol carries. */
export interface PresentedCredentials {
  /** The source address: every protocol has one, and a request without a valid token is limited by it. */
  address: string;
  /** An `Authorization` value (HTTP header, or gRPC metadata `authorization`): `Bearer <token>`, or `Basic` where the adapter carries `basic`. */
  authorization?: string | undefined;
  /** A bare token as the protocol carries it (`X-Consul-Token`, `?token=`); looked at before `authorization`. */
  token?: string | undefined;
}

/** What an HTTP request shows of itself, as fastify's request has it (no fastify import here). */
export interface HttpRequestFacts {
  ip: string;
  headers: Record<string, string | string[] | undefined>;
  query: unknown;
}

/**
 * The credentials an HTTP request presents the ways `carriers` declares: `x-consul-token` (the
 * header), `query-token` (`?token=`, once), `nacos-access-token` (`?accessToken=`, else
 * `?password=`), and `bearer`/`basic`/`grpc-authorization` (the `Authorization` header). What
 * a protocol does not carry is not read, so a `?token=` sent to an API that takes none never
 * authenticates. A request that presents none of them answers the shared `{address}` of its
 * address (HttpCredentialReader keeps them): no allocation on the requests that carry no
 * credential, the most frequent ones on a dev peer and on open routes.
 */
export class HttpCredentialReader {
  private readonly consulHeader: boolean;
  private readonly queryToken: boolean;
  private readonly nacosToken: boolean;
  private readonly authorization: boolean;
  /** The credentials of an address that presents none, frozen and shared; emptied when it grows past ANONYMOUS_MEMO_MAX. */
  private readonly anonymous = new Map<string, PresentedCredentials>();

  constructor(readonly carriers: readonly CredentialCarrier[]) {
    this.consulHeader = carriers.includes('x-consul-token');
    this.queryToken = carriers.includes('query-token');
    this.nacosToken = carriers.includes('nacos-access-token');
    this.authorization = carriers.includes('bearer') || carriers.includes('basic') || carriers.includes('grpc-authorization');
  }

  /** What `request` presents; the same object for every request of an address that presents nothing. */
  of(request: HttpRequestFacts): PresentedCredentials {
    let token = this.consulHeader ? nonEmpty(request.headers['x-consul-token']) : undefined;
    if (token === undefined && (this.queryToken || this.nacosToken) && typeof request.query === 'object' && request.query !== null) {
      const query = request.query as Record<string, unknown>;
      if (this.queryToken) token = nonEmpty(query.token);
      // Nacos clients send the login's accessToken on each call; npm nacos 1.x sends its password.
      if (token === undefined && this.nacosToken) token = nonEmpty(query.accessToken) ?? nonEmpty(query.password);
    }
    const authorization = this.authorization ? nonEmpty(request.headers.authorization) : undefined;
    if (token === undefined && authorization === undefined) return this.anonymousOf(request.ip);
    return { address: request.ip, token, authorization };
  }

  private anonymousOf(address: string): PresentedCredentials {
    const known = this.anonymous.get(address);
    if (known !== undefined) return known;
    if (this.anonymous.size >= ANONYMOUS_MEMO_MAX) this.anonymous.clear();
    const credentials: PresentedCredentials = Object.freeze({ address, token: undefined, authorization: undefined });
    this.anonymous.set(address, credentials);
    return credentials;
  }
}

/** Addresses whose credential-less `{address}` a reader keeps (clients are few; a scan of many addresses empties it). */
const ANONYMOUS_MEMO_MAX = 4_096;

/** A header or query value as a credential: a non-empty string, once (a repeated one is none). */
function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/**
 * One reader per list of carriers: adapters pass their constant list (CONSUL_CREDENTIALS,
 * NACOS_CARRIERS), so this holds a handful. It holds nothing of a peer's (the shared
 * `{address}` objects are frozen), so peers of one process may share it.
 */
const readers = new WeakMap<readonly CredentialCarrier[], HttpCredentialReader>();

/**
 * The credentials an HTTP request presents the ways `carriers` declares, read by the reader of
 * that list (HttpCredentialReader): no allocation when the request presents no credential.
 */
export function httpCredentials(request: HttpRequestFacts, carriers: readonly CredentialCarrier[]): PresentedCredentials {
  let reader = readers.get(carriers);
  if (reader === undefined) {
    reader = new HttpCredentialReader(carriers);
    readers.set(carriers, reader);
  }
  return reader.of(request);
}

/** What an operation needs: a scope (null: open to anyone, only rate limited) on these namespaces. */
export interface AccessNeed {
  scope: Scope | null;
  /** The namespaces the request reads or writes; empty for open operations and for admin ones that span namespaces. */
  namespaces: readonly string[];
}

export type AccessRefusalReason = 'no-credentials' | 'unknown-credentials' | 'scope' | 'namespace' | 'rate';

export type AccessDecision =
  | {
      allowed: true;
      /** The token's principal (anonymous in dev mode); undefined on an open operation called without a valid token. */
      principal: Principal | undefined;
      /** Whom the limits count: the held-slot shares take their slot for this subject. */
      subject: LimitSubject;
    }
  | {
      allowed: false;
      reason: AccessRefusalReason;
      /** What /v1 answers: 401 (no or unknown credentials), 403 (scope, namespace), 429 (rate). */
      status: 401 | 403 | 429;
      /** The refusal as /v1's `{code, message}` (with `Retry-After` for a 429). */
      error: RegistryError;
    };

/** How a protocol's client sends a token, in words for a 401's message. */
const CARRIER_WORDS: Record<CredentialCarrier, string | null> = {
  bearer: 'Authorization: Bearer <token>',
  basic: 'HTTP basic with the token as password',
  'x-consul-token': 'X-Consul-Token: <token>',
  'query-token': '?token=<token>',
  'grpc-authorization': 'gRPC metadata authorization: Bearer <token>',
  'dns-source': null,
  'nacos-access-token': '?accessToken=<token> (from POST /nacos/v1/auth/login, password = a registry token), or ?password=<token>',
};

/** The 401 message: none or unknown credentials, and how this protocol sends a token. */
export function unauthenticatedMessage(sent: boolean, carriers: readonly CredentialCarrier[]): string {
  const what = sent ? 'the credentials match no token' : 'no credentials';
  const ways = carriers.map((carrier) => CARRIER_WORDS[carrier]).filter((words): words is string => words !== null);
  return ways.length === 0 ? `${what}: this protocol takes no token` : `${what}: send ${ways.join(', or ')}`;
}

export class AccessPort {
  private readonly tokens: TokenTable;

  constructor(
    grants: readonly TokenGrant[],
    private readonly limits: LimitsPort,
  ) {
    this.tokens = new TokenTable(grants);
  }

  /** True when at least one token is configured; otherwise dev mode: every operation is open (still rate limited). */
  get enabled(): boolean {
    return this.tokens.enabled;
  }

  /**
   * The presented token: the bare one if any, else the `Authorization` value's (`Bearer`, or
   * `Basic` with the token as password when `basic` is among the carriers).
   */
  tokenOf(credentials: PresentedCredentials, carriers: readonly CredentialCarrier[]): string | undefined {
    if (credentials.token !== undefined && credentials.token.length > 0) return credentials.token;
    return presentedToken(credentials.authorization, carriers.includes('basic'));
  }

  /** Who the credentials are: anonymous in dev mode, undefined when they present no token or one that matches none. */
  principalOf(credentials: PresentedCredentials, carriers: readonly CredentialCarrier[]): Principal | undefined {
    if (!this.tokens.enabled) return ANONYMOUS;
    const token = this.tokenOf(credentials, carriers);
    return token === undefined ? undefined : this.tokens.authenticate(token);
  }

  /**
   * May these credentials do what `need` says? Counts the request once against the peer-wide
   * rate limit (by its valid token, else its address), as /v1 does, before the scope: a
   * client with bad credentials is limited by its address like any other.
   */
  admit(credentials: PresentedCredentials, need: AccessNeed, carriers: readonly CredentialCarrier[]): AccessDecision {
    const principal = this.principalOf(credentials, carriers);
    const subject: LimitSubject = { address: credentials.address, tokenName: rateNameOf(principal) };
    const limited = this.limits.rate(subject);
    if (limited) return { allowed: false, reason: 'rate', status: 429, error: limited };
    if (need.scope === null) return { allowed: true, principal, subject };
    if (!principal) {
      const sent = credentials.token !== undefined || credentials.authorization !== undefined;
      const error = new RegistryError('REG_ERR_UNAUTHORIZED', unauthenticatedMessage(sent, carriers));
      return { allowed: false, reason: sent ? 'unknown-credentials' : 'no-credentials', status: 401, error };
    }
    if (!hasScope(principal, need.scope)) {
      const error = new RegistryError('REG_ERR_FORBIDDEN', `token ${principal.name} does not have the ${need.scope} scope`);
      return { allowed: false, reason: 'scope', status: 403, error };
    }
    const refusal = namespaceRefusal(principal, need.namespaces);
    if (refusal) return { allowed: false, reason: 'namespace', status: 403, error: refusal };
    return { allowed: true, principal, subject };
  }
}
