import { performance } from 'node:perf_hooks';
import { parse as parseQuery } from 'fast-querystring';
import type { Shortcut, ShortcutContext } from '../http/front-door.js';
import type { ClientVerdict } from '../http/access/client-auth.js';
import type { Durable } from '../app/durable-write.js';
import type { RegisterResult } from '../registry/registry.js';
import { CLIENT_ROUTES } from './route-definitions.js';
import { JSON_TYPE } from './discover-shortcut.js';

/** The paths the shortcut is asked about: those starting as `POST /v1/instances` does. */
export const REGISTER_PATH = '/v1/instances';

/**
 * The largest body the shortcut reads itself (far above a registration's: five metadata keys
 * make about 200 bytes). A larger one, a body of no stated length (chunked) and one over the
 * route's limit go to fastify untouched: its body reader enforces the limit as the bytes come.
 */
export const REGISTER_SHORTCUT_BODY_MAX_BYTES = 64 * 1_024;

const ROUTE = CLIENT_ROUTES.register;

type Query = Record<string, string | undefined>;

/** What the shortcut runs of the route: its body parser and check, and the route's own write and answer. */
export interface RegisterShortcutDeps {
  /** The route's body limit (`limits.bodyMaxBytes`). */
  bodyLimit: number;
  /** Fastify's JSON body parser, as the route's (prototype-poisoning checks included). */
  parseJson(text: string): unknown;
  /** The route's body check (its schema): true when the body fits. */
  fits(body: unknown): boolean;
  /** The route's write from a checked body and the query's namespace; throws what the route throws. */
  register(body: unknown, queryNamespace: string | undefined): Durable<RegisterResult>;
  /** The route's answer to a write, as fastify serializes it. */
  answer(result: RegisterResult): string;
}

/** `application/json`, with or without a charset, as fastify's JSON parser takes it; anything else goes to fastify. */
function isPlainJson(contentType: string | undefined): boolean {
  return contentType === 'application/json' || contentType === JSON_TYPE || contentType === 'application/json; charset=UTF-8';
}

/** The query of `url` as fastify's router parses it, or undefined for a path that is not exactly the route's. */
function routeQuery(url: string): Query | undefined {
  if (url === REGISTER_PATH) return {};
  if (url.charCodeAt(REGISTER_PATH.length) !== 63 /* ? */ || url.includes('#')) return undefined;
  return parseQuery(url.slice(REGISTER_PATH.length + 1)) as Query;
}

/**
 * `POST /v1/instances` answered before fastify (http/front-door.ts): a registration is the
 * hottest write, and fastify's way (its request and reply objects, hooks, body reader, send
 * pipeline) was a fifth of a register's CPU on the peer (bench/findings.md, 2026-12-07). It
 * takes a request with a JSON body of a stated length within `REGISTER_SHORTCUT_BODY_MAX_BYTES`
 * and the route's limit, admitted by the access guard, once the peer is ready; it reads the
 * body, then parses and checks it with the route's own parser and schema, checks the namespaces
 * the body names against the principal's, and writes and answers with the route's own code, as
 * fastify's route would (201 or 200, the same bytes but for the `Date` header), timed into the
 * same histogram. Anything else is fastify's: a request it does not take goes on untouched; one
 * it took and cannot answer (a bad body, a refusal, a failed read) is handed back with the body
 * it read, and fastify answers it as it answers any request. An error of the route's write
 * (a validation or quota refusal, thrown before the store changes, or a durability barrier
 * that fails after it) is handed back with the body and that error, which the route answers
 * without writing again (`throwShortcutWriteFailure`): the answer is the one the shortcut's try
 * got, not a second try's.
 */
export function registerShortcut(context: ShortcutContext, deps: RegisterShortcutDeps): Shortcut {
  const bodyMax = Math.min(REGISTER_SHORTCUT_BODY_MAX_BYTES, deps.bodyLimit);

  /**
   * The body parsed and checked as the route's parser, schema and guard would, or undefined
   * where fastify is to judge it again and answer (bad JSON, the schema, a namespace the token
   * may not use).
   */
  const checked = (body: Buffer, query: Query, admission: ClientVerdict): unknown => {
    try {
      const parsed = deps.parseJson(body.toString());
      return deps.fits(parsed) && context.guard.admitsBody(admission, ROUTE.access, query, parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  };

  return (raw, res, handBack) => {
    if (raw.method !== ROUTE.method) return false;
    const startedAtMs = performance.now();
    const query = routeQuery(raw.url!);
    const { headers } = raw;
    const length = Number(headers['content-length']);
    if (
      query === undefined ||
      !isPlainJson(headers['content-type']) ||
      headers['transfer-encoding'] !== undefined ||
      headers['content-encoding'] !== undefined ||
      !(length > 0 && length <= bodyMax)
    ) {
      return false;
    }
    const admission = context.guard.admitBeforeBody(raw, ROUTE.access);
    if (!admission.allowed || (ROUTE.gatedUntilReady && !context.ready())) {
      // The request is counted: fastify gets the admission with it.
      context.guard.handOn(raw, admission);
      return false;
    }
    /** Once handed back or answered, nothing more: a late stream error is not a second request. */
    let settled = false;
    const giveBack = (body: Buffer | Error, writeFailure?: { error: unknown }) => {
      if (settled) return;
      settled = true;
      context.guard.handOn(raw, admission);
      handBack(raw, res, body, { startedAtMs, writeFailure });
    };
    const send = (result: RegisterResult) => {
      settled = true;
      // The client went away while the write was made durable: nothing to answer or time, as with fastify.
      if (res.destroyed) return;
      const status = result.created ? 201 : 200;
      const text = deps.answer(result);
      res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
      res.end(text);
      context.observe(ROUTE.method, ROUTE.url, status, (performance.now() - startedAtMs) / 1_000);
    };
    // The body as fastify's reader would get it: Node's parser ends the stream at the stated
    // length, so what arrives by 'end' is exactly that many bytes.
    const chunks: Buffer[] = [];
    raw.on('data', (chunk: Buffer) => chunks.push(chunk));
    raw.on('error', giveBack);
    raw.on('end', () => {
      if (settled) return;
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const parsed = checked(body, query, admission);
      if (parsed === undefined) return giveBack(body);
      let result: Durable<RegisterResult>;
      try {
        result = deps.register(parsed, query.namespace);
      } catch (error) {
        // The write refused it (a check, the quota): the route answers that refusal, not a second try.
        return giveBack(body, { error });
      }
      if (!(result instanceof Promise)) return send(result);
      settled = true;
      result.then(send, (error: unknown) => {
        settled = false;
        giveBack(body, { error });
      });
    });
    return true;
  };
}
