import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';

/**
 * How an HTTP app reads request bodies. Many clients send `content-type: application/json` (or
 * another type) on every request, a DELETE or a heartbeat included, with no body at all: a
 * `fetch` wrapper with default headers does. A route that takes no body must not answer such a
 * request 400 (nor close the connection): an empty body is no body, whatever its content type.
 * A route that needs a body still refuses the missing one, through its own validation.
 */

type Done = (error: Error | null, body?: unknown) => void;

/**
 * True when a request carries no body by its headers: `content-length: 0`, or neither a length
 * nor a chunked encoding (HTTP/1.1, RFC 9112 6.3). Decided before any byte of a body is read.
 */
export function hasNoBody(headers: FastifyRequest['headers']): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
}

/**
 * Wraps a string body parser so that an empty body parses to `undefined` (no body) rather than
 * reaching `parse`; for an app whose parser refuses empty input (fastify's JSON parser does).
 */
export function emptyBodyIsNone(parse: (request: FastifyRequest, body: string, done: Done) => void) {
  return (request: FastifyRequest, body: string | Buffer, done: Done): void => {
    if (body.length === 0) return done(null, undefined);
    parse(request, body.toString(), done);
  };
}

/**
 * The body parsers of the main app (native /v1, peer API, Prometheus SD; the Eureka plugin
 * brings its own, with the same rule): JSON (fastify's, with its prototype-poisoning checks),
 * where an empty body is no body; any other content type is taken only without a body, and a
 * body of it is answered 415 at once, unread (the connection is closed after that answer).
 */
export function installBodyParsers(app: FastifyInstance): void {
  // A text body would otherwise reach the routes as a string.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, emptyBodyIsNone(app.getDefaultJsonParser('error', 'error')));
  app.addContentTypeParser('*', (request, _payload, done: Done) => {
    if (hasNoBody(request.headers)) return done(null, undefined);
    done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE());
  });
}
