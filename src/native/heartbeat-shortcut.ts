import { performance } from 'node:perf_hooks';
import { parse as parseQuery } from 'fast-querystring';
import type { Shortcut, ShortcutContext } from '../http/front-door.js';
import type { Durable } from '../app/durable-write.js';
import type { InstanceKey, StoredInstance } from '../registry/types.js';
import { CLIENT_ROUTES } from './route-definitions.js';
import { DISCOVER_PREFIX, JSON_TYPE } from './discover-shortcut.js';

const ROUTE = CLIENT_ROUTES.heartbeat;
const INSTANCES = '/instances/';
const HEARTBEAT = '/heartbeat';

type Query = Record<string, string | undefined>;

/** What the shortcut runs of the route: its key, its write and its answer. */
export interface HeartbeatShortcutDeps {
  /** The route's key from the path's service and id and the query's namespace; throws what the route throws. */
  key(service: string, id: string, query: Query): InstanceKey;
  /**
   * The route's write for an instance this peer knows; undefined, with nothing done, for one it
   * does not (the route answers that, and counts it once).
   */
  heartbeat(key: InstanceKey): Durable<StoredInstance> | undefined;
  /** The route's answer to a renewal, as it sends it. */
  answer(entry: StoredInstance): string;
}

/**
 * A path segment the router takes as it is: no percent-encoding (fastify decodes it), no `;`
 * or `#`, nothing empty. What else a name or id may not hold the route's own checks judge.
 */
function plainSegment(segment: string): boolean {
  return segment.length > 0 && !segment.includes('%') && !segment.includes(';') && !segment.includes('#');
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
  if (!plainSegment(service) || service.includes('/') || !plainSegment(id) || id.includes('/')) return undefined;
  if (queryAt !== -1 && url.includes('#', queryAt)) return undefined;
  // The parser fastify's router uses (find-my-way: none for an empty query string).
  const query = (queryAt === -1 || queryAt === url.length - 1 ? {} : parseQuery(url.slice(queryAt + 1))) as Query;
  return { service, id, query };
}

/**
 * `PUT /v1/services/:service/instances/:id/heartbeat` answered before fastify
 * (http/front-door.ts): every instance heartbeats, so this is the request a peer serves most,
 * and fastify's way (its request and reply objects, hooks, the send pipeline) was a fixed
 * share of its CPU. It takes a heartbeat with no body (no content type, no stated length
 * above 0, not chunked: what clients send), admitted by the access guard, once the peer is
 * ready, for an instance this peer knows; it renews and answers with the route's own code, as
 * fastify's route would (200, the same bytes but for the `Date` header), timed into the same
 * histogram. Everything else goes to fastify untouched, the admission with it so the request
 * is counted once: a refusal, a bad name, an unknown instance (404: register again), a body,
 * an encoded path. A durability barrier that fails (a heartbeat that took an instance over and
 * waits for the data dir) hands the request to fastify with that failure, which the route
 * answers without renewing again (a second heartbeat would be a plain renewal, and answer 200
 * for a takeover the data dir does not hold).
 */
export function heartbeatShortcut(context: ShortcutContext, deps: HeartbeatShortcutDeps): Shortcut {
  /** The route's write for a heartbeat of this form, or undefined where fastify is to answer. */
  const renewed = (service: string, id: string, query: Query): Durable<StoredInstance> | undefined => {
    try {
      return deps.heartbeat(deps.key(service, id, query));
    } catch {
      return undefined;
    }
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
    const result = admission.allowed ? renewed(target.service, target.id, target.query) : undefined;
    if (result === undefined) {
      // The request is counted: fastify gets the admission with it.
      context.guard.handOn(raw, admission);
      return false;
    }
    const send = (entry: StoredInstance) => {
      // The client went away while a takeover was made durable: nothing to answer or time, as with fastify.
      if (res.destroyed) return;
      const text = deps.answer(entry);
      res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
      res.end(text);
      context.observe(ROUTE.method, ROUTE.url, 200, (performance.now() - startedAtMs) / 1_000);
    };
    if (!(result instanceof Promise)) {
      send(result);
      return true;
    }
    result.then(send, (error: unknown) => {
      context.guard.handOn(raw, admission);
      // No body was read: fastify finds none to read either, and answers the failure.
      handBack(raw, res, Buffer.alloc(0), { startedAtMs, writeFailure: error });
    });
    return true;
  };
}
