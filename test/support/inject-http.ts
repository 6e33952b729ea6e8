import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import type { HttpLayer, HttpRequest, HttpResponse } from '../../src/client/http.js';

/**
 * The client's HTTP layer over `app.inject()`: requests reach the real fastify apps of peers
 * running in this process (on a fake clock), watch streams included, without a socket.
 * A peer that is not attached refuses connections; detaching one breaks its open streams,
 * as a killed process resets its connections.
 */
export class InjectHttp implements HttpLayer {
  private readonly apps = new Map<string, FastifyInstance>();
  private readonly open = new Map<string, Set<Readable>>();

  attach(peerUrl: string, app: FastifyInstance): void {
    this.apps.set(peerUrl, app);
  }

  /** The peer is gone: connections are refused, and streams in flight break. */
  detach(peerUrl: string): void {
    this.apps.delete(peerUrl);
    for (const stream of this.open.get(peerUrl) ?? []) stream.destroy(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
    this.open.delete(peerUrl);
  }

  async request(peerUrl: string, request: HttpRequest): Promise<HttpResponse> {
    const app = this.apps.get(peerUrl);
    if (!app) throw Object.assign(new Error(`connect ECONNREFUSED ${peerUrl}`), { code: 'ECONNREFUSED' });
    if (request.signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    const response = await app.inject({
      method: request.method,
      url: request.path,
      headers: request.headers,
      payload: request.body,
      payloadAsStream: true,
    });
    const stream = response.stream() as Readable;
    let set = this.open.get(peerUrl);
    if (!set) this.open.set(peerUrl, (set = new Set()));
    set.add(stream);
    stream.once('close', () => set.delete(stream));
    request.signal?.addEventListener(
      'abort',
      () => {
        stream.destroy(Object.assign(new Error('aborted'), { name: 'AbortError' }));
        // What a closed connection tells the server: the watch route ends its subscription.
        response.raw.res.emit('close');
      },
      { once: true },
    );
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(response.headers)) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value?.toString();
    const text = async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
      return Buffer.concat(chunks).toString('utf8');
    };
    return {
      status: response.statusCode,
      headers,
      body: stream as AsyncIterable<Uint8Array>,
      text,
      dump: async () => void (await text()),
    };
  }

  async close(): Promise<void> {
    for (const peerUrl of [...this.open.keys()]) for (const stream of this.open.get(peerUrl) ?? []) stream.destroy();
    this.open.clear();
  }
}
