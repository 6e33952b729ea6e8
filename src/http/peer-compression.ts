import { createGunzip, gzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';

const gzipAsync = promisify(gzip);

/**
 * gzip on the peer routes: request bodies that arrive `content-encoding: gzip` are inflated
 * (the body limit applies to the inflated size), and answers of at least `minBytes` are
 * deflated when the caller accepts gzip. Peers in other regions do both (see
 * `compressMinBytes`): cross-region links are the slow and costly ones.
 */
export function installPeerCompression(app: FastifyInstance, minBytes: number, maxInflatedBytes: number): void {
  app.addHook('preParsing', async (request, _reply, payload) => {
    if (request.headers['content-encoding'] !== 'gzip') return payload;
    const inflated = createGunzip({ maxOutputLength: maxInflatedBytes }) as ReturnType<typeof createGunzip> & {
      receivedEncodedLength: number;
    };
    inflated.receivedEncodedLength = 0;
    payload.on('data', (chunk: Buffer) => {
      inflated.receivedEncodedLength += chunk.length;
    });
    payload.on('error', (error) => inflated.destroy(error));
    return payload.pipe(inflated);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (typeof payload !== 'string' || payload.length < minBytes) return payload;
    if (!/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) return payload;
    reply.header('content-encoding', 'gzip');
    reply.removeHeader('content-length');
    return gzipAsync(payload);
  });
}
