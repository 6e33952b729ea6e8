import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler, preParsingHookHandler } from 'fastify';
import type { Clock } from '../clock/clock.js';
import type { RegistryConfig } from '../config/load.js';
import { RegistryError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { DEFAULT_NAMESPACE } from '../registry/validate.js';
import { EMPTY_BODY_SHA256, readClaim, verifySignature, type PeerClaim } from '../security/peer-signature.js';
import { RateLimiter, rateClientOf, type RateClientKind } from '../security/rate-limit.js';
import { ReplayGuard } from '../security/replay-guard.js';
import { ANONYMOUS, hasNamespace, hasScope, presentedToken, TokenTable, type Principal } from '../security/tokens.js';
import { accessOf, scopeOf, type AccessClass } from './access-policy.js';
import { hookList } from './hook-list.js';

/** What the guard learnt about a request in `onRequest`, for the later hooks. */
interface RequestAccess {
  access: AccessClass;
  principal?: Principal;
  /** A signed peer request whose body is still to be verified. */
  peer?: { claim: PeerClaim; verified: boolean };
}

declare module 'fastify' {
  interface FastifyRequest {
    access: RequestAccess | null;
  }
}

export interface AccessGuardComponents {
  clock: Clock;
  logger: Logger;
}

/** How often one kind of refused peer request is logged at warn (the rest go to debug). */
const PEER_WARN_INTERVAL_MS = 10_000;

/** A peer certificate verified against the configured CA (mTLS). */
function hasVerifiedCertificate(request: FastifyRequest): boolean {
  const socket = request.raw.socket as Partial<TLSSocket>;
  return socket.encrypted === true && socket.authorized === true;
}

/** Whether fastify will read a body (its own rule: a length other than 0, or chunked). */
function announcesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Every namespace a client request names: `?namespace=` (repeated or not) and a body's `namespace`. */
function namespacesOf(request: FastifyRequest): string[] {
  const names: string[] = [];
  const query = (request.query ?? {}) as Record<string, unknown>;
  for (const value of [query.namespace].flat()) if (typeof value === 'string') names.push(value);
  const body = request.body;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const fromBody = (body as Record<string, unknown>).namespace;
    if (typeof fromBody === 'string') names.push(fromBody);
  }
  return names.length === 0 ? [DEFAULT_NAMESPACE] : names;
}

/**
 * The 429 message: who sent too much, the limit it passed and the setting that raises it.
 */
export function rateLimitedMessage(kind: RateClientKind, who: string, limits: RegistryConfig['limits'], retrySeconds: number): string {
  const setting = kind === 'loopback' ? 'rateLimitLoopbackPerSecond' : 'rateLimitPerSecond';
  const sender = kind === 'token' ? `token ${who}` : `address ${who} (requests without a valid token)`;
  const shared = kind === 'token' ? '' : '; clients behind one proxy or NAT share its address: tokens are limited one by one';
  return (
    `too many requests from ${sender}: more than ${limits[setting]}/s after a burst of ${limits.rateLimitBurst}; ` +
    `retry in ${retrySeconds} s, or raise limits.${setting} and limits.rateLimitBurst${shared}`
  );
}

/**
 * Applies the access policy (access-policy.ts) to every route from the root of the app:
 * - `onRequest`, before any body is read: route lookup (no entry: 403), client token and
 *   scope (401/403), rate limit (429), or the peer signature's headers, time and nonce;
 * - `preParsing`: a signed peer request's body is hashed as its raw bytes arrive (before
 *   any gunzip) and verified when the last byte is in, before it is parsed;
 * - `preHandler`: the namespaces the request names (query and body) against the token.
 * Nothing a refused request carries is ever applied: every check runs before the handler.
 * Hooks are callback-style (no promise per request), and the body and namespace checks are
 * attached only to the routes that need them.
 */
export function installAccessGuard(app: FastifyInstance, config: RegistryConfig, components: AccessGuardComponents): void {
  const { security, limits } = config;
  const log = components.logger.child({ component: 'access' });
  const tokens = new TokenTable(security.tokens);
  const secret = security.clusterSecret;
  const peerAuth = secret !== null || security.peerMtls;
  const replay = new ReplayGuard(components.clock, { windowMs: security.peerReplayWindowMs, maxNonces: security.peerNonceMax });
  const limiterOf = (ratePerSecond: number): RateLimiter =>
    new RateLimiter(components.clock, { ratePerSecond, burst: limits.rateLimitBurst, maxClients: limits.rateLimitClientsMax });
  // Tokens and other hosts' addresses share one table; refused peer calls are counted in it too.
  const limiter = limiterOf(limits.rateLimitPerSecond);
  const loopbackLimiter = limiterOf(limits.rateLimitLoopbackPerSecond);
  const lastPeerWarnMs = new Map<string, number>();

  const rateLimit = (address: string, tokenName?: string): void => {
    const client = rateClientOf(address, tokenName);
    const decision = (client.kind === 'loopback' ? loopbackLimiter : limiter).take(client.key);
    if (!decision.allowed) {
      const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1_000));
      throw new RegistryError('REG_ERR_RATE_LIMITED', rateLimitedMessage(client.kind, tokenName ?? address, limits, seconds), seconds);
    }
  };

  /** A refused peer request: counted against its address, logged (throttled), answered 401. */
  const peerRefusal = (request: FastifyRequest, why: string): RegistryError => {
    limiter.take(`peer:${request.ip}`);
    const nowMs = components.clock.nowMs();
    const kind = why.split(':')[0] ?? why;
    const fields = { address: request.ip, peer: request.headers['x-registry-peer'], why };
    if (nowMs - (lastPeerWarnMs.get(kind) ?? -Infinity) >= PEER_WARN_INTERVAL_MS) {
      lastPeerWarnMs.set(kind, nowMs);
      log.warn(fields, 'peer request refused');
    } else {
      log.debug(fields, 'peer request refused');
    }
    return new RegistryError('REG_ERR_UNAUTHORIZED', `peer authentication failed: ${why}`);
  };

  /** Checks a signed request's body digest and takes its nonce; the error to answer, if any. */
  const verifyPeer = (request: FastifyRequest, bodySha256: string): RegistryError | undefined => {
    const pending = request.access?.peer;
    if (!pending || secret === null) return peerRefusal(request, 'no signature to verify');
    const { claim } = pending;
    const parts = { method: request.method, path: request.raw.url ?? request.url, bodySha256, ...claim };
    if (!verifySignature(secret, parts, claim.signature)) return peerRefusal(request, 'bad signature (wrong cluster secret, or a tampered request)');
    const outcome = replay.remember(claim.nonce);
    if (outcome === 'replayed') return peerRefusal(request, 'replayed: this nonce was already used');
    if (outcome === 'full') return new RegistryError('REG_ERR_RATE_LIMITED', 'too many signed peer requests within the replay window; retry shortly', 1);
    pending.verified = true;
    return undefined;
  };

  const peerOnRequest = (request: FastifyRequest): void => {
    if (!peerAuth) return;
    if (security.peerMtls && hasVerifiedCertificate(request)) {
      request.access = { access: 'peer' };
      return;
    }
    if (limiter.exhausted(`peer:${request.ip}`)) {
      throw new RegistryError('REG_ERR_RATE_LIMITED', 'too many refused peer requests from this address; retry later', 1);
    }
    if (secret === null) throw peerRefusal(request, 'peer routes need a peer certificate signed by the cluster CA');
    const claim = readClaim(request.headers);
    if (typeof claim === 'string') throw peerRefusal(request, claim);
    const freshness = replay.freshness(claim.timestampMs);
    if (freshness !== 'fresh') {
      const offsetMs = claim.timestampMs - components.clock.nowMs();
      throw peerRefusal(
        request,
        `timestamp: ${offsetMs} ms from this peer's clock, outside the replay window of ${security.peerReplayWindowMs} ms (check the clocks)`,
      );
    }
    if (replay.seen(claim.nonce)) throw peerRefusal(request, 'replayed: this nonce was already used');
    request.access = { access: 'peer', peer: { claim, verified: false } };
  };

  const clientOnRequest = (request: FastifyRequest, reply: FastifyReply, access: AccessClass): void => {
    const eureka = access === 'eureka-read' || access === 'eureka-write';
    let principal: Principal | undefined = ANONYMOUS;
    if (tokens.enabled) {
      const token = presentedToken(request.headers.authorization, eureka);
      principal = token === undefined ? undefined : tokens.authenticate(token);
    }
    rateLimit(request.ip, principal && principal !== ANONYMOUS ? principal.name : undefined);
    if (access === 'public' || !tokens.enabled) return;
    if (!principal) {
      reply.header('www-authenticate', eureka ? 'Basic realm="registry", charset="UTF-8"' : 'Bearer realm="registry"');
      const what = request.headers.authorization === undefined ? 'no credentials' : 'the credentials match no token';
      throw new RegistryError('REG_ERR_UNAUTHORIZED', `${what}: send Authorization: Bearer <token>${eureka ? ' (or HTTP basic with the token as password)' : ''}`);
    }
    const scope = scopeOf(access);
    if (scope !== undefined && !hasScope(principal, scope)) {
      throw new RegistryError('REG_ERR_FORBIDDEN', `token ${principal.name} does not have the ${scope} scope`);
    }
    request.access = { access, principal };
  };

  /** A signed peer request's body is hashed as it arrives and verified before it is parsed. */
  const verifyBodyAsItArrives: preParsingHookHandler = (request, _reply, payload, done) => {
    const pending = request.access?.peer;
    // Fastify reads a body only when one is announced; a bodiless call is verified in preHandler.
    if (!pending || !announcesBody(request)) return done(null, payload);
    const hash = createHash('sha256');
    const verifier = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        callback(null, chunk);
      },
      flush(callback) {
        callback(pending.verified ? null : (verifyPeer(request, hash.digest('hex')) ?? null));
      },
    });
    // The body parser listens too; this one keeps a refusal that nobody reads (a request
    // answered before its body, say 415) from becoming an uncaught error.
    verifier.on('error', () => {});
    payload.on('error', (error) => verifier.destroy(error));
    done(null, payload.pipe(verifier));
  };

  /** A bodiless peer request never went through the verifier: verify it as an empty body. */
  const verifyBodilessPeerCall: preHandlerHookHandler = (request, _reply, done) => {
    const pending = request.access?.peer;
    if (pending && !pending.verified) return done(verifyPeer(request, EMPTY_BODY_SHA256));
    done();
  };

  /** The namespaces a client request names (query and body) against its token. */
  const checkNamespaces: preHandlerHookHandler = (request, _reply, done) => {
    const state = request.access;
    const principal = state?.principal;
    if (!state || !principal || state.access === 'admin' || state.access === 'public') return done();
    const eureka = state.access === 'eureka-read' || state.access === 'eureka-write';
    for (const namespace of eureka ? [security.eurekaNamespace] : namespacesOf(request)) {
      if (!hasNamespace(principal, namespace)) {
        return done(new RegistryError('REG_ERR_FORBIDDEN', `token ${principal.name} may not use namespace ${namespace.slice(0, 128)}`));
      }
    }
    done();
  };

  app.decorateRequest('access', null);

  // The bodiless-call and namespace checks are attached to the routes that need them only, so
  // the others (every client route of an open peer) run no hook for them at all. The body
  // verifier stays on the root: route hooks run after the peer routes' own gunzip, and the
  // signature covers the bytes as sent.
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    const classes = methods.map((method) => accessOf(method, route.url));
    methods.forEach((method, i) => {
      if (method !== 'HEAD' && classes[i] === undefined) {
        log.error({ method, route: route.url }, 'route has no access policy: every request to it is refused (add it to src/http/access-policy.ts)');
      }
    });
    if (peerAuth && classes.includes('peer')) route.preHandler = [...hookList(route.preHandler), verifyBodilessPeerCall];
    if (tokens.enabled && classes.some((access) => access !== undefined && access !== 'peer' && access !== 'public' && access !== 'admin')) {
      route.preHandler = [...hookList(route.preHandler), checkNamespaces];
    }
  });

  app.addHook('onRequest', (request, reply, done) => {
    const pattern = request.routeOptions.url;
    if (pattern === undefined) {
      // No route: the not-found answer, still counted against the address.
      rateLimit(request.ip);
      return done();
    }
    const access = accessOf(request.method, pattern);
    if (access === undefined) return done(new RegistryError('REG_ERR_FORBIDDEN', `${request.method} ${pattern}: this route has no access policy`));
    if (access === 'peer') peerOnRequest(request);
    else clientOnRequest(request, reply, access);
    done();
  });

  // Only signed peer calls have a body to verify; a peer without peer auth runs no hook for it.
  if (peerAuth) app.addHook('preParsing', verifyBodyAsItArrives);
}
