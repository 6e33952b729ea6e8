import { Pool } from 'undici';
import { sendRetryingEarlyClose } from './early-close.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface HttpRequest {
  method: HttpMethod;
  /** Path and query, starting with `/`; appended to the peer URL's own path. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Aborts the request, or the reading of its body. */
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string | undefined>;
  /** The body as it arrives (a watch stream never ends by itself). */
  body: AsyncIterable<Uint8Array>;
  /** Reads the whole body as text. */
  text(): Promise<string>;
  /** Reads and drops the rest of the body, so the connection can be reused. */
  dump(): Promise<void>;
}

/**
 * How the client sends HTTP. Production uses `createUndiciHttp`; tests pass an in-process
 * fake so they never open a socket. A connection failure is a thrown error; an aborted
 * request throws too (the caller knows why it aborted).
 */
export interface HttpLayer {
  request(peerUrl: string, request: HttpRequest): Promise<HttpResponse>;
  /** Releases every connection. */
  close(): Promise<void>;
}

export interface UndiciHttpOptions {
  /** Most connections to one peer (a watch stream holds one for as long as it runs). */
  connectionsPerPeer: number;
  /** How long opening a TCP (or TLS) connection may take before it counts as a failure. */
  connectTimeoutMs: number;
  /** CA certificate(s) to trust for https peers. */
  ca?: string | Buffer;
}

/** Adds `Authorization: Bearer <token>` to every request of a layer. */
export function withBearerToken(http: HttpLayer, token: string): HttpLayer {
  return {
    request: (peerUrl, request) =>
      http.request(peerUrl, { ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } }),
    close: () => http.close(),
  };
}

/**
 * An HTTP layer over undici with its own connection pool per peer (never the global
 * dispatcher, so the client neither changes nor depends on the application's undici setup).
 * undici's own header and body timeouts are off: the client times every call itself on its
 * injected clock (a watch stream must stay open indefinitely between keep-alives).
 */
export function createUndiciHttp(options: UndiciHttpOptions): HttpLayer {
  const pools = new Map<string, { pool: Pool; basePath: string }>();
  const poolFor = (peerUrl: string) => {
    let entry = pools.get(peerUrl);
    if (!entry) {
      const url = new URL(peerUrl);
      entry = {
        pool: new Pool(url.origin, {
          connections: options.connectionsPerPeer,
          connect: { timeout: options.connectTimeoutMs, ...(options.ca === undefined ? {} : { ca: options.ca }) },
          headersTimeout: 0,
          bodyTimeout: 0,
        }),
        basePath: url.pathname.replace(/\/+$/, ''),
      };
      pools.set(peerUrl, entry);
    }
    return entry;
  };
  return {
    async request(peerUrl, request) {
      const { pool, basePath } = poolFor(peerUrl);
      // Every request of the API is idempotent: one lost to the keep-alive race is sent again (early-close.ts).
      const response = await sendRetryingEarlyClose(
        () =>
          pool.request({
            method: request.method,
            path: `${basePath}${request.path}`,
            headers: request.headers,
            body: request.body,
            signal: request.signal,
          }),
        request.signal,
      );
      const headers: Record<string, string | undefined> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
      }
      return {
        status: response.statusCode,
        headers,
        body: response.body,
        text: () => response.body.text(),
        dump: () => response.body.dump(),
      };
    },
    async close() {
      const all = [...pools.values()];
      pools.clear();
      // destroy, not close: a watch stream in flight would hold close() open.
      await Promise.all(all.map(({ pool }) => pool.destroy()));
    },
  };
}
