import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Transform } from 'node:stream';

/**
 * The body of a signed peer call, hashed as its raw bytes arrive (before any gunzip: the
 * signature covers the bytes as sent) and verified on the last byte, before anything parses
 * it. A stream of our own rather than a library's: it is a pass-through with a hash beside it.
 */

/** Whether fastify will read a body (its own rule: a length other than 0, or chunked). */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * `payload` passed through unchanged, its bytes hashed with SHA-256 on the way; when the last
 * one is in, `verify` gets the hex digest and the error it returns (if any) fails the stream,
 * so the parser never sees the end of a body that does not match its signature.
 */
export function verifiedAsItArrives(payload: NodeJS.ReadableStream, verify: (bodySha256: string) => Error | undefined): Transform {
  const hash = createHash('sha256');
  const verifier = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      callback(null, chunk);
    },
    flush(callback) {
      callback(verify(hash.digest('hex')) ?? null);
    },
  });
  // The body parser listens too; this one keeps a refusal that nobody reads (a request
  // answered before its body, say 415) from becoming an uncaught error.
  verifier.on('error', () => {});
  payload.on('error', (error: Error) => verifier.destroy(error));
  return payload.pipe(verifier);
}
