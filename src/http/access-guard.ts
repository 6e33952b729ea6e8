import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, preParsingHookHandler, preValidationHookHandler } from 'fastify';
import type { Clock } from '../clock/clock.js';
import type { RegistryConfig } from '../config/load.js';
import { RegistryError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { EMPTY_BODY_SHA256, type PeerClaim } from '../security/peer-signature.js';
import type { Principal } from '../security/tokens.js';
import {
  ClientAuth,
  clientVerdict,
  isNamespaceBound,
  namespaceRefusal,
  namespacesNamed,
  rateNameOf,
  type ClientAccessClass,
  type ClientVerdict,
} from './access/client-auth.js';
import { PeerAuth, PeerRefusalLog, peerRefusedError, replayCacheFullError } from './access/peer-auth.js';
import { ClientRateLimits } from './access/rate-limit.js';
import { hostCheckOf, hostRefusal } from './access/host-check.js';
import { announcesBody, verifiedAsItArrives } from './access/signed-body.js';
import { accessOf, type AccessClass } from './access-policy.js';
import { hookList } from './hook-list.js';

// Kept here for the callers that imported it from the guard.
export { rateLimitedMessage } from './access/rate-limit.js';

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

/**
 * A client request's admission, taken by a shortcut before fastify (http/front-door.ts) and
 * kept on the raw request when the shortcut hands the request on: the guard's `onRequest` then
 * uses it rather than asking again, so a request is counted once against its rate limit.
 */
const ADMISSION = Symbol('registry.admission');
type AdmittedRequest = IncomingMessage & { [ADMISSION]?: ClientVerdict };

/** What the guard offers a shortcut before fastify: the very checks its hooks run. */
export interface AccessGuard {
  /**
   * Admits a bodiless client request to a route of class `access` with its parsed `query`
   * (token, rate limit, scope, the namespaces it names; the checks and order of the hooks):
   * allowed when it may be answered. Counts the request against its rate limit: a shortcut
   * that then hands the request to fastify (refused, or for any reason of its own) passes the
   * admission on with `handOn`, and the hooks answer from it without counting it again.
   */
  admit(raw: IncomingMessage, access: ClientAccessClass, query: unknown): ClientVerdict;
  /**
   * Admits a client request with a body before it is read: the checks of `admit` but the
   * namespaces, which the request's body may name too; `admitsBody` checks them once it is
   * parsed, as the hooks do before validation. Counts the request as `admit` does.
   */
  admitBeforeBody(raw: IncomingMessage, access: ClientAccessClass): ClientVerdict;
  /** True when the namespaces that `query` and the parsed `body` name are all the admitted principal's. */
  admitsBody(admission: ClientVerdict, access: ClientAccessClass, query: unknown, body: unknown): boolean;
  /** Keeps `admission` on the request for the hooks, before the shortcut hands it to fastify. */
  handOn(raw: IncomingMessage, admission: ClientVerdict): void;
}

/**
 * The DNS-rebinding check (access/host-check.ts) as an `onRequest` hook for an app of its own
 * (the Consul API), or null when the peer needs none (tokens on, or a network address). The
 * HTTP app's guard runs the same check first in its own hook.
 */
export function hostCheckHook(config: RegistryConfig): onRequestHookHandler | null {
  const hosts = hostCheckOf(config);
  if (hosts === null) return null;
  return (request, _reply, done) => {
    const host = request.headers.host;
    done(hosts.allows(host) ? undefined : hostRefusal(host ?? ''));
  };
}

export interface AccessGuardComponents {
  clock: Clock;
  logger: Logger;
  /**
   * The peer's one rate limiter (the adapter contract's limits port, `node.ports.limits.rates`),
   * shared with every other protocol so a token has one budget on the whole peer.
   */
  rates: ClientRateLimits;
}

/**
 * Applies the access policy (access-policy.ts) to every route from the root of the app. Each
 * concern is a module of src/http/access/ (client-auth, peer-auth, rate-limit, signed-body);
 * this function only reads a request's facts and runs them in order, as fastify hooks:
 * - `onRequest`, before any body is read: route lookup (no entry: 403), client token and
 *   scope (401/403), rate limit (429), or the peer signature's headers, time and nonce;
 * - `preParsing`: a signed peer request's body is hashed as its raw bytes arrive (before
 *   any gunzip) and verified when the last byte is in, before it is parsed;
 * - `preValidation`: a bodiless peer call's signature, and the namespaces the request names
 *   (query and body) against the token, once the body is parsed and before it is validated
 *   against the route's schema: a request for another namespace gets its 403, not a 400.
 * Nothing a refused request carries is ever applied: every check runs before the handler.
 * Hooks are callback-style (no promise per request), and the body and namespace checks are
 * attached only to the routes that need them.
 */
export function installAccessGuard(app: FastifyInstance, config: RegistryConfig, components: AccessGuardComponents): AccessGuard {
  const { security } = config;
  const log = components.logger.child({ component: 'access' });
  const clients = new ClientAuth(security.tokens);
  const peers = new PeerAuth(components.clock, security);
  const { rates } = components;
  const refusals = new PeerRefusalLog(components.clock, log);
  // A dev peer on loopback answers only requests for its own names (DNS rebinding; host-check.ts).
  const hosts = hostCheckOf(config);

  /** A refused peer request: counted against its address, logged (throttled), answered 401. */
  const peerRefusal = (request: FastifyRequest, why: string): RegistryError => {
    rates.countPeerRefusal(request.ip);
    refusals.record({ address: request.ip, peer: request.headers['x-registry-peer'], why });
    return peerRefusedError(why);
  };

  /** Checks a signed request's body digest and takes its nonce; the error to answer, if any. */
  const verifyPeer = (request: FastifyRequest, bodySha256: string): RegistryError | undefined => {
    const pending = request.access?.peer;
    if (!pending) return peerRefusal(request, 'no signature to verify');
    const outcome = peers.verify(pending.claim, { method: request.method, path: request.raw.url ?? request.url, bodySha256 });
    if (outcome === 'full') return replayCacheFullError();
    if (outcome !== 'verified') return peerRefusal(request, outcome.refused);
    pending.verified = true;
    return undefined;
  };

  const peerOnRequest = (request: FastifyRequest): void => {
    if (!peers.enabled) return;
    if (peers.acceptsCertificate(request.raw.socket as Partial<TLSSocket>)) {
      request.access = { access: 'peer' };
      return;
    }
    const throttled = rates.checkPeerRefusals(request.ip);
    if (throttled) throw throttled;
    const claim = peers.admitSigned(request.headers);
    if (typeof claim === 'string') throw peerRefusal(request, claim);
    request.access = { access: 'peer', peer: { claim, verified: false } };
  };

  /** A client request's token, rate limit and scope, in that order: counts the request once. */
  const admitClient = (authorization: string | undefined, address: string, access: ClientAccessClass): ClientVerdict => {
    const principal = clients.principalOf(authorization, access);
    const limited = rates.check(address, rateNameOf(principal));
    if (limited) return { allowed: false, error: limited };
    return clientVerdict({ access, tokensEnabled: clients.enabled, principal, credentialsSent: authorization !== undefined });
  };

  const clientOnRequest = (request: FastifyRequest, reply: FastifyReply, access: ClientAccessClass): void => {
    const raw = request.raw as AdmittedRequest;
    const verdict = raw[ADMISSION] ?? admitClient(request.headers.authorization, request.ip, access);
    if (!verdict.allowed) {
      if (verdict.challenge !== undefined) reply.header('www-authenticate', verdict.challenge);
      throw verdict.error;
    }
    if (verdict.principal) request.access = { access, principal: verdict.principal };
  };

  /** A signed peer request's body is hashed as it arrives and verified before it is parsed. */
  const verifyBodyAsItArrives: preParsingHookHandler = (request, _reply, payload, done) => {
    const pending = request.access?.peer;
    // Fastify reads a body only when one is announced; a bodiless call is verified in preValidation.
    if (!pending || !announcesBody(request.headers)) return done(null, payload);
    done(null, verifiedAsItArrives(payload, (bodySha256) => (pending.verified ? undefined : verifyPeer(request, bodySha256))));
  };

  /** A bodiless peer request never went through the verifier: verify it as an empty body. */
  const verifyBodilessPeerCall: preValidationHookHandler = (request, _reply, done) => {
    const pending = request.access?.peer;
    if (pending && !pending.verified) return done(verifyPeer(request, EMPTY_BODY_SHA256));
    done();
  };

  /** The namespaces a client request names (query and body) against its token: the 403, if any. */
  const namespacesRefusal = (access: AccessClass, principal: Principal | undefined, query: unknown, body: unknown): RegistryError | undefined => {
    if (!principal || !isNamespaceBound(access)) return undefined;
    return namespaceRefusal(principal, namespacesNamed(access as ClientAccessClass, query, body, security.eurekaNamespace));
  };

  const checkNamespaces: preValidationHookHandler = (request, _reply, done) => {
    const state = request.access;
    done(state ? namespacesRefusal(state.access, state.principal, request.query, request.body) : undefined);
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
    // First in the list: a route's own preValidation hooks (a 415 for a body it cannot read) come after the guard.
    if (peers.enabled && classes.includes('peer')) route.preValidation = [verifyBodilessPeerCall, ...hookList(route.preValidation)];
    if (clients.enabled && classes.some(isNamespaceBound)) route.preValidation = [checkNamespaces, ...hookList(route.preValidation)];
  });

  app.addHook('onRequest', (request, reply, done) => {
    if (hosts !== null && !hosts.allows(request.headers.host)) return done(hostRefusal(request.headers.host ?? ''));
    const pattern = request.routeOptions.url;
    if (pattern === undefined) {
      // No route: the not-found answer, still counted against the address.
      const limited = rates.check(request.ip);
      if (limited) throw limited;
      return done();
    }
    const access = accessOf(request.method, pattern);
    if (access === undefined) return done(new RegistryError('REG_ERR_FORBIDDEN', `${request.method} ${pattern}: this route has no access policy`));
    if (access === 'peer') peerOnRequest(request);
    else clientOnRequest(request, reply, access);
    done();
  });

  // Only signed peer calls have a body to verify; a peer without peer auth runs no hook for it.
  if (peers.enabled) app.addHook('preParsing', verifyBodyAsItArrives);

  /** The host, token, rate limit and scope checks of a shortcut's request, in the hooks' order. */
  const admitBeforeBody = (raw: IncomingMessage, access: ClientAccessClass): ClientVerdict => {
    if (hosts !== null && !hosts.allows(raw.headers.host)) return { allowed: false, error: hostRefusal(raw.headers.host ?? '') };
    return admitClient(raw.headers.authorization, raw.socket.remoteAddress as string, access);
  };

  return {
    admit: (raw, access, query) => {
      const verdict = admitBeforeBody(raw, access);
      if (!verdict.allowed) return verdict;
      const refusal = namespacesRefusal(access, verdict.principal, query, undefined);
      // The hooks refuse it in preValidation, as they refuse any other such request.
      return refusal ? { allowed: false, error: refusal } : verdict;
    },
    admitBeforeBody,
    admitsBody: (admission, access, query, body) =>
      admission.allowed && namespacesRefusal(access, admission.principal, query, body) === undefined,
    handOn: (raw, admission) => {
      (raw as AdmittedRequest)[ADMISSION] = admission;
    },
  };
}
