import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { defaultsOf, limitSettings } from '../config/settings.js';
import { RegistryError, type ErrorCode } from '../errors.js';
import { RouteMethods } from './route-methods.js';

/** Fastify's own error codes and the catalogue code each one is answered with. */
const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'REG_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'REG_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'REG_ERR_VALIDATION',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'REG_ERR_INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'REG_ERR_INVALID_JSON',
  FST_ERR_BAD_URL: 'REG_ERR_VALIDATION',
};

/** Maps any error thrown while handling a request to a catalogue error. */
export function toRegistryError(error: FastifyError | Error): RegistryError {
  if (error instanceof RegistryError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const first = fastifyError.validation[0];
    const where = fastifyError.validationContext ?? 'request';
    const field = first?.instancePath ? `${where}${first.instancePath.replaceAll('/', '.')}` : where;
    return new RegistryError('REG_ERR_VALIDATION', `${field}: ${first?.message ?? 'is invalid'}`);
  }
  if (fastifyError.code?.startsWith('Z_')) {
    // zlib, inflating a `content-encoding: gzip` body (peer routes)
    return new RegistryError('REG_ERR_VALIDATION', `body: is not valid gzip (${fastifyError.message})`);
  }
  const mapped = fastifyError.code ? fastifyCodes[fastifyError.code] : undefined;
  if (mapped) return new RegistryError(mapped, fastifyError.message);
  // JSON.parse failures from the content-type parser carry status 400 but no code.
  if (error instanceof SyntaxError || fastifyError.statusCode === 400) {
    return new RegistryError('REG_ERR_INVALID_JSON', error.message);
  }
  return new RegistryError('REG_ERR_INTERNAL', 'internal error');
}

/** Body types a route may take, as far as this server has parsers for them (checked per scope). */
const BODY_TYPES = ['application/json', 'application/xml', 'text/xml', 'text/plain'];

/** The body limit of a request's route, and the setting behind it. */
function bodyLimitOf(request: FastifyRequest, limits: BodyLimits): { bytes: number; setting: string } {
  const isPeer = request.routeOptions.url?.startsWith('/v1/peer/') === true;
  return isPeer
    ? { bytes: limits.peerBodyMaxBytes, setting: 'limits.peerBodyMaxBytes' }
    : { bytes: request.routeOptions.bodyLimit ?? limits.bodyMaxBytes, setting: 'limits.bodyMaxBytes' };
}

export interface BodyLimits {
  bodyMaxBytes: number;
  peerBodyMaxBytes: number;
}

/**
 * 415 and 413 as fastify words them ("Unsupported Media Type", "Request body is too large")
 * leave a newcomer guessing: say which types this route takes, or the limit and its setting.
 */
function explain(mapped: RegistryError, request: FastifyRequest, server: FastifyInstance, limits: BodyLimits): RegistryError {
  if (mapped.code === 'REG_ERR_UNSUPPORTED_MEDIA_TYPE' && mapped.message.startsWith('Unsupported Media Type')) {
    const sent = request.headers['content-type'] ?? '(none)';
    const taken = BODY_TYPES.filter((type) => server.hasContentTypeParser(type));
    const curl = taken.includes('application/json') ? "; with curl -d, add -H 'content-type: application/json'" : '';
    return new RegistryError('REG_ERR_UNSUPPORTED_MEDIA_TYPE', `content-type ${sent} is not taken here: send the body as ${taken.join(' or ')}${curl}`);
  }
  if (mapped.code === 'REG_ERR_BODY_TOO_LARGE') {
    const limit = bodyLimitOf(request, limits);
    return new RegistryError('REG_ERR_BODY_TOO_LARGE', `the body is larger than ${limit.bytes} bytes, the most this route takes (${limit.setting}); send less, or raise ${limit.setting}`);
  }
  return mapped;
}

/**
 * Installs the `{code, message}` error and not-found handlers on an app or plugin scope, before
 * its routes are added: a known path asked with another method answers 405 with `Allow`.
 */
export function installErrorHandlers(app: FastifyInstance, limits: BodyLimits = defaultsOf(limitSettings)): void {
  const routes = new RouteMethods();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.add(method, route.url);
  });
  app.setErrorHandler(function (this: FastifyInstance, error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const mapped = explain(toRegistryError(error), request, this, limits);
    if (mapped.code === 'REG_ERR_INTERNAL') {
      request.log.error({ err: error }, 'request failed');
    } else {
      request.log.debug({ code: mapped.code, message: mapped.message }, 'request refused');
    }
    if (mapped.retryAfterSeconds !== undefined) reply.header('Retry-After', String(mapped.retryAfterSeconds));
    return reply.code(mapped.status).send(mapped.toJSON());
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = routes.methodsFor(path);
    const error =
      allowed.length > 0
        ? new RegistryError('REG_ERR_METHOD_NOT_ALLOWED', `${request.method} is not a method of ${path}: it takes ${allowed.join(', ')}`)
        : new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no route ${request.method} ${path}`);
    if (allowed.length > 0) reply.header('allow', allowed.join(', '));
    return reply.code(error.status).send(error.toJSON());
  });
}
