import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parse as parseQuery } from 'fast-querystring';
import { httpCredentials } from '../adapters/access.js';
import type { HostCheck } from '../http/access/host-check.js';
import type { Shortcut } from '../http/front-door.js';
import { NACOS_CARRIERS, type NacosAccess, type NacosAdmission } from './access.js';
import type { NacosParams } from './instance-input.js';
import { namespaceOfNacos } from './names.js';
import { unmappedAddress } from './push.js';

/** The path of the hottest Nacos read: `GET /nacos/v1/ns/instance/list` (every client polls it). */
export const LIST_PATH = '/nacos/v1/ns/instance/list';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * What the shortcut made of a request it handed on to fastify: the admission it took (the
 * request was counted against the rate limit) or the refusal it got. The route takes it
 * instead of admitting the request again, so a request is counted once whichever way it went.
 */
export type HandedOn = { admission: NacosAdmission } | { refusal: unknown };

/** The admissions handed on with their raw requests (weakly held: a request that ends is forgotten). */
export class HandedOnAdmissions {
  private readonly byRequest = new WeakMap<IncomingMessage, HandedOn>();

  keep(raw: IncomingMessage, handedOn: HandedOn): void {
    this.byRequest.set(raw, handedOn);
  }

  /** What the shortcut handed on with `raw`, once (undefined: the route admits the request itself). */
  take(raw: IncomingMessage): HandedOn | undefined {
    const handedOn = this.byRequest.get(raw);
    if (handedOn !== undefined) this.byRequest.delete(raw);
    return handedOn;
  }
}

/** The first value of each string field of a parsed query or form (a repeated key: its first). */
export function firstValues(source: unknown, out: NacosParams): NacosParams {
  if (source === null || typeof source !== 'object') return out;
  for (const key of Object.keys(source)) {
    const value = (source as Record<string, unknown>)[key];
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') out[key] = first;
  }
  return out;
}

export interface ListShortcutDeps {
  /** The dev peer's DNS-rebinding check (null: none needed): the app's `onRequest` hook makes the same one. */
  hostCheck: HostCheck | null;
  access: NacosAccess;
  ready: () => boolean;
  handedOn: HandedOnAdmissions;
  /**
   * The list route's answer (routes.ts `listAnswer`): the shared bytes of the list, after any
   * push subscription the request asks for. Throws what the route throws for bad parameters.
   */
  answer: (params: NacosParams, namespace: string, admission: NacosAdmission, sourceAddress: string) => Buffer;
  /** Records an answered list in the adapter's metrics (operation `instance.list`, outcome ok), in seconds. */
  observe: (seconds: number) => void;
}

/** A request that carries a body (fastify would read it; the shortcut leaves such requests to fastify). */
function hasBody(raw: IncomingMessage): boolean {
  const length = raw.headers['content-length'];
  return (length !== undefined && length !== '0') || raw.headers['transfer-encoding'] !== undefined;
}

/**
 * `GET /nacos/v1/ns/instance/list` answered before fastify (http/front-door.ts): a list is a
 * lookup of bytes encoded once per change of the service (documents.ts), so fastify's routing,
 * request and reply objects were a measurable share of its cost. It makes the checks fastify
 * makes of the request, in the same order and with the same code: the DNS-rebinding Host check
 * (the app's onRequest hook), the namespace, the access port's admission (token, scope,
 * namespace, the peer's rate limit), the readiness gate, then the route's own parameters and
 * answer. Whatever is not that plain success is handed to fastify, which answers it as for
 * any request (the same status, body and refusal log line); the admission or refusal goes
 * with it, so a request is counted once against the rate limit. Requests with a body, another
 * method or a path that is not exactly the list's go to fastify untouched.
 */
export function listShortcut(deps: ListShortcutDeps): Shortcut {
  return (raw, res) => {
    if (raw.method !== 'GET' || hasBody(raw)) return false;
    const url = raw.url!;
    if (url.length > LIST_PATH.length && url.charCodeAt(LIST_PATH.length) !== 0x3f /* ? */) return false;
    if (url.includes('#')) return false;
    const startedAtMs = performance.now();
    // Refused Hosts go to fastify before anything is counted, as its onRequest hook refuses them.
    if (deps.hostCheck !== null && !deps.hostCheck.allows(raw.headers.host)) return false;
    // The parser fastify's router uses, and paramsOf's first value of each field.
    const query = url.length > LIST_PATH.length + 1 ? parseQuery(url.slice(LIST_PATH.length + 1)) : {};
    const params = firstValues(query, {});
    let namespace: string;
    try {
      namespace = namespaceOfNacos(params.namespaceId);
    } catch {
      return false;
    }
    const address = raw.socket.remoteAddress ?? '';
    let admission: NacosAdmission;
    try {
      admission = deps.access.admit(httpCredentials({ ip: address, headers: raw.headers, query: params }, NACOS_CARRIERS), 'read', namespace);
    } catch (refusal) {
      deps.handedOn.keep(raw, { refusal });
      return false;
    }
    let body: Buffer;
    try {
      if (!deps.ready()) throw new Error('not ready');
      body = deps.answer(params, namespace, admission, unmappedAddress(address));
    } catch {
      deps.handedOn.keep(raw, { admission });
      return false;
    }
    res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': body.length });
    res.end(body);
    deps.observe((performance.now() - startedAtMs) / 1_000);
    return true;
  };
}
