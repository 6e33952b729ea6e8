import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerOptions as HttpServerOptions, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions as HttpsServerOptions } from 'node:https';
import { Readable } from 'node:stream';
import type { preParsingHookHandler } from 'fastify';
import type { StallWatch } from '../clock/stall-watch.js';
import { holdThenHandOn, PEER_CALL_PREFIX, skippedPastDeadline } from './abandoned-calls.js';
import type { AccessGuard } from './access-guard.js';

/**
 * A request handled before fastify: true when it took the request, false to hand the request,
 * untouched, to fastify. A shortcut answers only the plain success of its route and hands on
 * everything else (an error, a refusal, a form it does not know), so every such answer has one
 * implementation: fastify's. A shortcut that reads the request's body before it can tell takes
 * the request, and gives it to fastify afterwards with `handBack` when it cannot answer it.
 */
export type Shortcut = (raw: IncomingMessage, res: ServerResponse, handBack: HandBack) => boolean;

/**
 * Gives fastify a request that a shortcut took and read the body of: `body` is what it read (or
 * the error its read ended with), which fastify then reads in place of the socket's stream
 * (`bodyReadByShortcut`, a `preParsing` hook of the route), so it parses, checks and answers
 * the request as if no shortcut had seen it, timed from when the shortcut took it.
 * `writeFailure`: what the route's write threw in the shortcut, or its durability barrier
 * failed with. The route answers that failure (`throwShortcutWriteFailure`) and does not write
 * again: a second try could answer otherwise than the first (a heartbeat that took an instance
 * over and was not made durable renews as a plain heartbeat the second time; a quota may have
 * changed), and would count or log the request twice.
 */
export type HandBack = (raw: IncomingMessage, res: ServerResponse, body: Buffer | Error, handed: HandedOver) => void;

/** What a shortcut tells fastify of a request it hands back, beside the body. */
export interface HandedOver {
  /** When the shortcut took the request (`performance.now()`): its latency counts from there (`shortcutStartedAtMs`). */
  startedAtMs: number;
  /** What the route's write threw, or its durability barrier failed with, in the shortcut (wrapped: any value may be thrown). */
  writeFailure?: { error: unknown };
}

/** Where a handed-back request keeps the body its shortcut read. */
const BODY_READ = Symbol('bodyReadByShortcut');
/** Where a handed-back request keeps the failure of the write its shortcut made. */
const WRITE_FAILED = Symbol('writeFailedInShortcut');
/** Where a handed-back request keeps when its shortcut took it. */
const STARTED_AT = Symbol('shortcutStartedAtMs');

type HandedBack = IncomingMessage & { [BODY_READ]?: Buffer | Error; [WRITE_FAILED]?: { error: unknown }; [STARTED_AT]?: number };

/**
 * When the shortcut that handed this request back took it (`performance.now()`), or undefined
 * for a request fastify got first: the latency histogram times a handed-back request from its
 * arrival, not from the hand-back (a slow upload the route refuses is not a fast request).
 */
export function shortcutStartedAtMs(raw: IncomingMessage): number | undefined {
  return (raw as HandedBack)[STARTED_AT];
}

/**
 * For a route with a shortcut that writes, first thing in its handler: throws what the route's
 * key or write threw, or its durability barrier failed with, in the shortcut for this request,
 * so that the route answers that and does not write again (`HandBack`); nothing for any other
 * request.
 */
export function throwShortcutWriteFailure(raw: IncomingMessage): void {
  const failed = (raw as HandedBack)[WRITE_FAILED];
  if (failed !== undefined) throw failed.error;
}

/**
 * The `preParsing` hook of a route whose shortcut reads bodies: a request handed back gets the
 * body the shortcut read as its payload (a stream of that one buffer, or one that fails with
 * the read's error); any other request keeps its own.
 */
export const bodyReadByShortcut: preParsingHookHandler = (request, _reply, payload, done) => {
  const body = (request.raw as HandedBack)[BODY_READ];
  if (body === undefined) return done(null, payload);
  if (body instanceof Error) {
    const failed = new Readable({ read() {} });
    failed.destroy(body);
    return done(null, failed);
  }
  done(null, Readable.from([body], { objectMode: false }));
};

/**
 * What a route's shortcut needs from the server: where it goes, and the checks and figures
 * fastify's hooks make of every request, so a shortcut makes the same ones.
 */
export interface ShortcutContext {
  frontDoor: FrontDoor;
  /** The access guard's admission (access-guard.ts): token, rate limit, scope, namespaces. */
  guard: AccessGuard;
  /** The readiness gate's question (readiness-gate.ts): is the start-up sync done? */
  ready(): boolean;
  /** The HTTP latency histogram's observation (metrics-routes.ts), in seconds. */
  observe(method: string, route: string, statusCode: number, seconds: number): void;
}

/** The server's settings that fastify applies itself only to a server it makes (not one from `serverFactory`). */
export interface FrontDoorTimeouts {
  keepAliveTimeoutMs: number;
  requestTimeoutMs: number;
}

/**
 * The peer's HTTP server, made through fastify's `serverFactory`: each request goes to the
 * shortcut of its route when there is one, and to fastify otherwise. Fastify's way costs a
 * fixed 1 to 3 µs of CPU per request (its request and reply objects, hooks, the send
 * pipeline: bench/findings.md, 2026-12-03), a tenth of a discover whose bytes are shared and
 * more of a small one, so the hottest read gets a shortcut that reuses the route's own
 * listing and the server's guard, readiness gate and histogram (native/discover-shortcut.ts),
 * and so does the hottest write, a registration (native/register-shortcut.ts), which reads its
 * body first and hands the request back with it when it cannot answer.
 * The Nacos port has a front door of its own for its list (nacos/list-shortcut.ts).
 * No shortcut is taken while the server closes: fastify answers those with its 503.
 */
export class FrontDoor {
  /** Kept as an array: iterating a Map makes an iterator and an entry per request. */
  private readonly shortcuts: { prefix: string; shortcut: Shortcut }[] = [];
  private closing = false;
  private stallWatch: StallWatch | undefined;

  /** The shortcut for requests whose path starts with `prefix`: it is asked about each of them. */
  add(prefix: string, shortcut: Shortcut): void {
    this.shortcuts.push({ prefix, shortcut });
  }

  /**
   * After the loop stood still, peer calls are held a turn and those whose caller has given up
   * are skipped unanswered (abandoned-calls.ts).
   */
  skipAbandonedPeerCalls(watch: StallWatch): void {
    this.stallWatch = watch;
  }

  /** From now on every request goes to fastify (the server is closing). */
  close(): void {
    this.closing = true;
  }

  /** The request listener: a shortcut's answer, else fastify's `handler`. */
  listener(handler: (raw: IncomingMessage, res: ServerResponse) => void): (raw: IncomingMessage, res: ServerResponse) => void {
    // One function for every request (not a closure per request).
    const handBack: HandBack = (raw, res, body, handed) => {
      const request = raw as HandedBack;
      request[BODY_READ] = body;
      request[STARTED_AT] = handed.startedAtMs;
      if (handed.writeFailure !== undefined) request[WRITE_FAILED] = handed.writeFailure;
      handler(raw, res);
    };
    const dispatch = (raw: IncomingMessage, res: ServerResponse): void => {
      if (!this.closing) {
        const url = raw.url ?? '';
        for (let i = 0; i < this.shortcuts.length; i++) {
          const { prefix, shortcut } = this.shortcuts[i]!;
          if (url.startsWith(prefix) && shortcut(raw, res, handBack)) return;
        }
      }
      handler(raw, res);
    };
    return (raw, res) => {
      const watch = this.stallWatch;
      if (watch !== undefined && !this.closing && (raw.url ?? '').startsWith(PEER_CALL_PREFIX) && watch.holding()) {
        if (skippedPastDeadline(raw, watch)) return;
        return holdThenHandOn(raw, res, watch, dispatch);
      }
      dispatch(raw, res);
    };
  }

  /**
   * fastify's `serverFactory`: the HTTP or HTTPS server with the settings fastify would have
   * given it (it sets the keep-alive and request timeouts only on a server it makes itself).
   */
  serverFactory(options: { http: HttpServerOptions; https?: HttpsServerOptions } & FrontDoorTimeouts) {
    return (handler: (raw: IncomingMessage, res: ServerResponse) => void): Server => {
      const listener = this.listener(handler);
      const server = options.https ? createHttpsServer({ ...options.http, ...options.https }, listener) : createHttpServer(options.http, listener);
      server.keepAliveTimeout = options.keepAliveTimeoutMs;
      server.requestTimeout = options.requestTimeoutMs;
      return server;
    };
  }
}
