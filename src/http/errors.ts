import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RegistryError, type ErrorCode } from '../errors.js';

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

/** Installs the `{code, message}` error and not-found handlers on an app or plugin scope. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const mapped = toRegistryError(error);
    if (mapped.code === 'REG_ERR_INTERNAL') {
      request.log.error({ err: error }, 'request failed');
    } else {
      request.log.debug({ code: mapped.code, message: mapped.message }, 'request refused');
    }
    if (mapped.retryAfterSeconds !== undefined) reply.header('Retry-After', String(mapped.retryAfterSeconds));
    return reply.code(mapped.status).send(mapped.toJSON());
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`);
    return reply.code(error.status).send(error.toJSON());
  });
}
