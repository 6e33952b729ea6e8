import { performance } from 'node:perf_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HandBack, Shortcut, ShortcutContext } from '../http/front-door.js';
import type { ClientVerdict } from '../http/access/client-auth.js';
import type { Durable } from '../app/durable-write.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import { CLIENT_ROUTES } from './route-definitions.js';
import { DISCOVER_PREFIX, JSON_TYPE, PLAIN_SEGMENT, routerQuery } from './discover-shortcut.js';

const ROUTE = CLIENT_ROUTES.heartbeat;
const INSTANCES = '/instances/';
const HEARTBEAT = '/heartbeat';
/** A heartbeat has no body: what a handed-back one gives fastify to read (nothing). */
const NO_BODY = Buffer.alloc(0);

type Query = Record<string, string | undefined>;

/** What the shortcut runs of the route: its key, its write and its answer. */
export interface HeartbeatShortcutDeps {
  /** The route's key from the path's service and id and the query's namespace; throws what the route throws. */
  key(service: string, id: string, query: Query): InstanceKey;
  /** The route's write; throws what the route's write throws (an unknown instance: 404). */
  heartbeat(key: InstanceKey): Durable<StoredInstance>;
  /** The route's answer to a renewal, as it sends it. */
  answer(entry: StoredInstance): string;
}

/**
 * An id segment the router takes as it is: no percent-encoding (fastify decodes it), no `/`,
 * `;` or `#`, not empty. What else an id may not hold the route's own check judges. (A service
 * segment is a name: PLAIN_SEGMENT, as for discover.)
 */
function plainIdSegment(segment: string): boolean {
  return segment.length > 0 && !segment.includes('%') && !segment.includes(';') && !segment.includes('#') && !segment.includes('/');
}

/** The service, id and query of a heartbeat's URL, or undefined for any other path (or a form fastify should judge). */
function heartbeatTarget(url: string): { service: string; id: string; query: Query } | undefined {
  const queryAt = url.indexOf('?', DISCOVER_PREFIX.length);
  const pathEnd = queryAt === -1 ? url.length : queryAt;
  if (!url.endsWith(HEARTBEAT, pathEnd)) return undefined;
  const instancesAt = url.indexOf(INSTANCES, DISCOVER_PREFIX.length);
  if (instancesAt === -1) return undefined;
  const service = url.slice(DISCOVER_PREFIX.length, instancesAt);
  const id = url.slice(instancesAt + INSTANCES.length, pathEnd - HEARTBEAT.length);
  if (!PLAIN_SEGMENT.test(service) || !plainIdSegment(id)) return undefined;
  if (queryAt !== -1 && url.includes('#', queryAt)) return undefined;
  return { service, id, query: routerQuery(url, queryAt) };
}

/**
 * `PUT /v1/services/:service/instances/:id/heartbeat` answered before fastify
 * (http/front-door.ts): every instance heartbeats, so this is the request a peer serves most,
 * and fastify's way (its request and reply objects, hooks, the send pipeline) was a fixed
 * share of its CPU. It takes a heartbeat with no body (no content type, no stated length
 * above 0, not chunked: what clients send), admitted by the access guard, once the peer is
 * ready, for an instance this peer knows; it renews and answers with the route's own code, as
 * fastify's route would (200, the same bytes but for the `Date` header), timed into the same
 * histogram. A refusal, a body, an encoded path and a peer that is not ready go to fastify
 * untouched (with the admission, so the request is counted once). What the route's key or
 * write throws (a bad name, an unknown instance: 404, register again), and a durability
 * barrier that fails (a heartbeat that took an instance over and waits for the data dir), is
 * handed to fastify with that error, which the route answers without renewing or counting
 * again (a second heartbeat after a failed takeover would be a plain renewal, and answer 200
 * for a takeover the data dir does not hold).
 */
export function heartbeatShortcut(context: ShortcutContext, deps: HeartbeatShortcutDeps): Shortcut {
  // Per shortcut, not per request: a heartbeat answered at once makes no closure.
  /** Answers a renewal as the route does, timed from when the shortcut took the request. */
  const send = (res: ServerResponse, entry: StoredInstance, startedAtMs: number): void => {
    // The client went away while a takeover was made durable: nothing to answer or time, as with fastify.
    if (res.destroyed) return;
    const text = deps.answer(entry);
    res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
    res.end(text);
    context.observe(ROUTE.method, ROUTE.url, 200, (performance.now() - startedAtMs) / 1_000);
  };
  /** Hands the route a heartbeat whose key or write threw, or whose barrier failed, with that failure (and its admission). */
  const giveBack = (raw: IncomingMessage, res: ServerResponse, handBack: HandBack, admission: ClientVerdict, startedAtMs: number, error: unknown): void => {
    context.guard.handOn(raw, admission);
    handBack(raw, res, NO_BODY, { startedAtMs, writeFailure: { error } });
  };

  return (raw, res, handBack) => {
    if (raw.method !== ROUTE.method) return false;
    const startedAtMs = performance.now();
    const { headers } = raw;
    const length = headers['content-length'];
    if (headers['content-type'] !== undefined || headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) return false;
    const target = heartbeatTarget(raw.url!);
    // Not ready: fastify's hooks answer (their order puts the readiness gate before the
    // namespace check the admission makes), and count the request themselves.
    if (target === undefined || (ROUTE.gatedUntilReady && !context.ready())) return false;
    const admission = context.guard.admit(raw, ROUTE.access, target.query);
    // The request is counted: fastify gets the admission with it, whichever way it goes there.
    if (!admission.allowed) {
      context.guard.handOn(raw, admission);
      return false;
    }
    let result: Durable<StoredInstance>;
    try {
      result = deps.heartbeat(deps.key(target.service, target.id, target.query));
    } catch (error) {
      giveBack(raw, res, handBack, admission, startedAtMs, error);
      return true;
    }
    if (!(result instanceof Promise)) send(res, result, startedAtMs);
    else {
      result.then(
        (entry) => send(res, entry, startedAtMs),
        (error: unknown) => giveBack(raw, res, handBack, admission, startedAtMs, error),
      );
    }
    return true;
  };
}
