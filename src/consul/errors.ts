import type { FastifyError, FastifyInstance } from 'fastify';
import { RegistryError } from '../errors.js';
import type { Outcome } from '../metrics/adapter-metrics.js';

/**
 * Consul answers errors as plain text with a status code (its clients read `statusCode` and
 * show the body as the message: python-consul raises NotFound on 404 and ACLPermissionDenied
 * on 403, the npm client sets `err.statusCode`). The Consul API answers the same way, so the
 * `{code, message}` body of the native API is not used here; the text still names the field
 * and what to do.
 */
export class ConsulError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** For 429: when to try again, sent as `Retry-After` (seconds). */
    readonly retryAfterSeconds?: number,
    /** Headers the answer carries (`Allow` on a 405). */
    readonly headers?: Readonly<Record<string, string>>,
    /**
     * The outcome the metrics count, when the status does not say it: Consul answers a missing
     * or unknown token 403 (its clients have no 401), counted `unauthenticated` (metrics.ts).
     */
    readonly outcome?: Outcome,
  ) {
    super(message);
    this.name = 'ConsulError';
  }
}

/** A 400: what Consul answers for a body or query it cannot use. */
export function badRequest(message: string): ConsulError {
  return new ConsulError(400, message);
}

/** The status and text of any error a Consul route throws. */
export function consulAnswerOf(error: unknown): { status: number; text: string; retryAfterSeconds?: number } {
  if (error instanceof ConsulError) {
    return { status: error.status, text: error.message, ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }) };
  }
  if (error instanceof RegistryError) {
    // The registry's own refusals (validation, quota, storage, not found) keep their status;
    // the text is the catalogue message, prefixed with its code for the logs of the client.
    return { status: error.status, text: `${error.code}: ${error.message}`, ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }) };
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { status: 413, text: 'Request body too large' };
  if (fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return { status: 415, text: 'Unsupported content type: send JSON' };
  if (error instanceof SyntaxError || fastifyError.statusCode === 400 || fastifyError.code?.startsWith('FST_ERR_CTP')) {
    return { status: 400, text: `Request decode failed: ${(error as Error).message}` };
  }
  return { status: 500, text: 'internal error' };
}

/** Installs the plain-text error and not-found answers on the Consul app. */
export function installConsulErrors(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const answer = consulAnswerOf(error);
    if (answer.status >= 500) request.log.error({ err: error }, 'consul request failed');
    if (error instanceof ConsulError && error.headers) reply.headers(error.headers);
    if (error instanceof ConsulError && error.outcome) request.consulOutcome = error.outcome;
    if (answer.retryAfterSeconds !== undefined) reply.header('Retry-After', String(answer.retryAfterSeconds));
    return reply.code(answer.status).type('text/plain; charset=utf-8').send(answer.text);
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .type('text/plain; charset=utf-8')
      .send(`no Consul route ${request.method} ${request.url.split('?')[0]} on this registry (docs/consul.md lists the routes it serves)`),
  );
}
