import { performance } from 'node:perf_hooks';
import { parse as parseQuery } from 'fast-querystring';
import type { Shortcut, ShortcutContext } from '../http/front-door.js';
import { CLIENT_ROUTES } from './route-definitions.js';

/** The content type of every JSON answer of the native API. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** The paths the shortcut is asked about: those of `GET /v1/services/:service`, and of the routes below it. */
export const DISCOVER_PREFIX = '/v1/services/';

/**
 * A listing as the route answers it: the service's revision (`X-Registry-Index`) and the shared
 * bytes, or their build in slices (a large service's, instance-json.ts).
 */
export interface SharedListing {
  revision: number;
  bytes: Buffer | Promise<Buffer>;
}

const ROUTE = CLIENT_ROUTES.service;
/**
 * A service segment the router takes as it is: the characters of a name (NAME_PATTERN), none
 * of them percent-encoded, no slash (a route below the service), `?` or `#`. Anything else
 * (an encoded name, a bad one) goes to fastify, which decodes and judges it.
 */
export const PLAIN_SEGMENT = /^[A-Za-z0-9._:-]+$/;

/**
 * The query of `url` from its `?` at `queryAt` (-1: none), parsed as fastify's router parses it
 * (find-my-way: none for an empty query string).
 */
export function routerQuery(url: string, queryAt: number): Record<string, string | undefined> {
  return (queryAt === -1 || queryAt === url.length - 1 ? {} : parseQuery(url.slice(queryAt + 1))) as Record<string, string | undefined>;
}

/** The listing, or nothing for a bad namespace, status or group (the route says what is wrong). */
function listingOrNothing<Q>(listing: (rawService: string, query: Q) => SharedListing, service: string, query: Q): SharedListing | undefined {
  try {
    return listing(service, query);
  } catch {
    return undefined;
  }
}

/**
 * `GET /v1/services/:service` answered before fastify (http/front-door.ts), in the forms that
 * answer at once with the shared bytes: no `index` (a long poll waits), no `near` (a listing
 * of its own). It makes the checks fastify's hooks make, with the same code (the access
 * guard's admission, the readiness gate's question), answers with the route's own listing
 * function, and times the request into the same histogram. Whatever is not that plain success
 * (a refusal, not ready, a bad name or query, an encoded path, HEAD) is handed to fastify,
 * which answers it as for any request; the admission goes with it, so a request is counted
 * once against its rate limit. The answer is the route's, byte for byte, but for the `Date`
 * header (a test holds the two equal).
 */
export function discoverShortcut(context: ShortcutContext, listing: (rawService: string, query: Record<string, string | undefined>) => SharedListing): Shortcut {
  return (raw, res) => {
    if (raw.method !== ROUTE.method) return false;
    const startedAtMs = performance.now();
    const url = raw.url!;
    const queryAt = url.indexOf('?', DISCOVER_PREFIX.length);
    const service = url.slice(DISCOVER_PREFIX.length, queryAt === -1 ? undefined : queryAt);
    if (!PLAIN_SEGMENT.test(service) || url.includes('#', DISCOVER_PREFIX.length)) return false;
    const query = routerQuery(url, queryAt);
    if (query.index !== undefined || query.near !== undefined) return false;
    // Not ready: fastify's hooks answer (their order puts the readiness gate before the
    // namespace check the admission makes), and count the request themselves.
    if (ROUTE.gatedUntilReady && !context.ready()) return false;
    const admission = context.guard.admit(raw, ROUTE.access, query);
    const answer = admission.allowed ? listingOrNothing(listing, service, query) : undefined;
    // Bytes still being built (a large service's, in slices): the route waits for them.
    if (answer === undefined || !Buffer.isBuffer(answer.bytes)) {
      // The request is counted: fastify gets the admission with it.
      context.guard.handOn(raw, admission);
      return false;
    }
    res.writeHead(200, { 'x-registry-index': String(answer.revision), 'content-type': JSON_TYPE, 'content-length': answer.bytes.length });
    res.end(answer.bytes);
    context.observe(ROUTE.method, ROUTE.url, 200, (performance.now() - startedAtMs) / 1_000);
    return true;
  };
}
