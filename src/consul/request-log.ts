import type { FastifyInstance } from 'fastify';

/**
 * What the Consul listener logs of its requests: one debug line per request, as the native
 * API (src/http/server.ts), never fastify's two info lines with the raw URL. Consul clients
 * send their ACL token in the URL (`?token=`, which python-consul adds to every call), so a
 * URL is logged only with every credential parameter's value replaced, and cut to
 * `LOGGED_URL_MAX_LENGTH` characters: a request with a 6 KB query string costs the log no more
 * than any other.
 */
export const LOGGED_URL_MAX_LENGTH = 256;

/** Query parameters that carry a credential, by lower-cased name. */
const CREDENTIAL_PARAMS = new Set(['token', 'access_token', 'x-consul-token', 'authorization']);
const REDACTED = '[redacted]';

/** A URL as it may be logged: credential values replaced, then cut to `LOGGED_URL_MAX_LENGTH`. */
export function loggableUrl(url: string): string {
  const question = url.indexOf('?');
  let out = url;
  if (question >= 0) {
    const params = url
      .slice(question + 1)
      .split('&')
      .map((pair) => {
        const equals = pair.indexOf('=');
        const name = decodeName(equals < 0 ? pair : pair.slice(0, equals));
        return CREDENTIAL_PARAMS.has(name.toLowerCase()) && equals >= 0 ? `${pair.slice(0, equals)}=${REDACTED}` : pair;
      });
    out = `${url.slice(0, question)}?${params.join('&')}`;
  }
  return out.length > LOGGED_URL_MAX_LENGTH ? `${out.slice(0, LOGGED_URL_MAX_LENGTH)}...(${out.length} chars)` : out;
}

/** A parameter name as a client may have encoded it (`%74oken`); the raw text when it is not valid. */
function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    return name;
  }
}

/**
 * One debug line per request (method, redacted URL, status, time) when the peer logs at debug;
 * no hook at all otherwise (the level is fixed for the life of the process).
 */
export function installConsulRequestLog(app: FastifyInstance, debugLogging: boolean): void {
  if (!debugLogging) return;
  app.addHook('onResponse', (request, reply, done) => {
    request.log.debug({ method: request.method, url: loggableUrl(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'consul request');
    done();
  });
}
