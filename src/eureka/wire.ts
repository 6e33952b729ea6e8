import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalid } from '../errors.js';
import type { InstanceStatus } from '../registry/types.js';
import { asInteger } from './instance-input.js';
import type { RenewalQuery } from './status-rules.js';
import { toEurekaStatus } from './status-rules.js';
import { fromXml, toXml } from './xml.js';

/**
 * How the Eureka API talks: body parsers (JSON and XML, in this plugin's scope only), answers
 * in JSON when `Accept` asks for it and XML otherwise (as Eureka decides), gzip when asked,
 * and the query parameters Eureka clients send.
 */

const gzipAsync = promisify(gzip);

/** What a body of another content type parses to: only a register needs a body, and it refuses this. */
export const UNSUPPORTED_BODY = Symbol('unsupported body');

export type Query = Record<string, string | string[] | undefined>;

/** Installs the Eureka body parsers and the gzip hook on this plugin scope. */
export function installWire(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  // An empty body is fine: heartbeats and status changes are bodiless PUTs, whatever their content type says.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    jsonParser(request, body as string, done);
  });
  app.addContentTypeParser(['application/xml', 'text/xml'], { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, fromXml(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, (body as Buffer).length === 0 ? undefined : UNSUPPORTED_BODY);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
    if (payload.length === 0 || !acceptsGzip(request.headers['accept-encoding'])) return payload;
    reply.header('content-encoding', 'gzip');
    reply.header('vary', 'accept-encoding');
    return gzipAsync(payload);
  });
}

/** True when an `Accept-Encoding` header accepts gzip (by name or `*`, with a non-zero q). */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  return text.split(',').some((part) => {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    if (name.trim() !== 'gzip' && name.trim() !== '*') return false;
    const q = params.map((param) => param.trim()).find((param) => param.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** Eureka's choice: JSON when `Accept` mentions json, XML otherwise (no header included). */
export function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return typeof accept === 'string' && accept.toLowerCase().includes('json');
}

/** Answers a document in the format the request asks for. */
export function sendDocument(request: FastifyRequest, reply: FastifyReply, document: Record<string, unknown>): FastifyReply {
  if (wantsJson(request)) return reply.type('application/json').send(JSON.stringify(document));
  return reply.type('application/xml').send(toXml(document));
}

/** Eureka's not found: 404 with an empty body, which its clients expect. */
export function sendNotFound(reply: FastifyReply): FastifyReply {
  return reply.code(404).send();
}

/** The first value of a query parameter (Eureka takes the first of repeated ones). */
export function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A status in a query parameter; `UNKNOWN` gives null; absent gives undefined. */
export function queryStatus(query: Query, name: string): InstanceStatus | null | undefined {
  const raw = first(query[name]);
  if (raw === undefined || raw === '') return undefined;
  const status = toEurekaStatus(raw);
  if (status === undefined) throw invalid(name, 'must be one of UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN');
  return status === 'UNKNOWN' ? null : status;
}

/** `lastDirtyTimestamp` in epoch ms, if given. */
export function queryDirtyTimestamp(query: Query): number | undefined {
  const raw = first(query.lastDirtyTimestamp);
  if (raw === undefined || raw === '') return undefined;
  const value = asInteger(raw);
  if (value === undefined || value < 0) throw invalid('lastDirtyTimestamp', 'must be epoch milliseconds');
  return value;
}

/** What a heartbeat's query says (see decideRenewal). */
export function renewalQuery(query: Query): RenewalQuery {
  const status = queryStatus(query, 'status');
  const overriddenStatus = queryStatus(query, 'overriddenstatus');
  const lastDirtyTimestampMs = queryDirtyTimestamp(query);
  return {
    ...(status ? { status } : {}),
    ...(overriddenStatus !== undefined ? { overriddenStatus } : {}),
    ...(lastDirtyTimestampMs !== undefined ? { lastDirtyTimestampMs } : {}),
  };
}
