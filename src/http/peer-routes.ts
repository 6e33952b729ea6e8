import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { RegistryError } from '../errors.js';
import type { RegistryNode } from '../node.js';
import { SNAPSHOT_STREAM_MAX_DURATION_MS } from '../replication/snapshot-stream.js';
import { installPeerCompression } from './peer-compression.js';
import { peerMethods, type PeerMethod } from '../transport/transport.js';
import { Type } from 'typebox';
import { responses } from './openapi/schemas.js';
import { serve, type RouteGroup } from './route-definition.js';

/** The peer API: peer credentials only, open while this peer syncs (others must reach it then). */
export const PEER_ROUTES = {
  call: {
    method: 'POST',
    url: '/v1/peer/:method',
    access: 'peer',
    gatedUntilReady: false,
    doc: {
      summary: 'Peer API: replication, probes, anti-entropy, snapshots',
      description: 'How peers talk to each other (docs/replication.md); clients never need it.',
      tags: ['peer'],
      params: Type.Object({ method: Type.Union(peerMethods.map((method) => Type.Literal(method))) }),
      body: Type.Object({}, { description: "The method's request (docs/replication.md)." }),
      response: responses({ 200: Type.Object({}, { description: "The method's answer." }) }, [400, 404, 413]),
    },
  },
  snapshotStream: {
    method: 'POST',
    url: '/v1/peer/snapshot-stream',
    access: 'peer',
    gatedUntilReady: false,
    doc: {
      summary: 'Peer API: the whole registry as a stream of NDJSON frames (start-up sync)',
      description:
        'A joining peer reads it to catch up (docs/replication.md, "Start-up sync"); its start frame says whether this peer\'s registry is settled (not itself mid-sync). At most 4 at once per peer, a fifth is answered 503 REG_ERR_SNAPSHOT_BUSY.',
      tags: ['peer'],
      body: Type.Object({ from: Type.String({ description: "The caller's peer id." }) }),
      response: responses({ 200: Type.String({ description: 'application/x-ndjson: a start frame, records frames, an end frame.' }) }, [400, 413, 503]),
    },
  },
} satisfies RouteGroup;

/** The calling peer's id: every peer request names it in `from` (a descriptor in `ping`); null when it does not. */
function callerOf(body: unknown): string | null {
  const from = (body as { from?: unknown } | null | undefined)?.from;
  const id = typeof from === 'object' && from !== null ? (from as { id?: unknown }).id : from;
  return typeof id === 'string' && id.length > 0 && id.length <= 128 ? id : null;
}

/**
 * The peer API, `POST /v1/peer/{method}`: replication batches, membership probes,
 * anti-entropy exchanges and start-up snapshot pages; and `POST /v1/peer/snapshot-stream`, the
 * whole registry streamed to a joining peer. Its own plugin scope, so that peer
 * authentication can guard it apart from the client routes. Bodies may be large (an
 * exchange after a long partition), up to `limits.peerBodyMaxBytes`.
 */
export async function peerRoutes(app: FastifyInstance, options: { node: Pick<RegistryNode, 'peerApi' | 'config' | 'transport'> }): Promise<void> {
  const { node } = options;
  installPeerCompression(app, node.config.cluster.compressMinBytes, node.config.limits.peerBodyMaxBytes);
  const peerBytes = node.transport.peerBytes;
  // After the compression hook: the bytes as they travel (registry_peer_bytes_total).
  if (peerBytes) app.addHook('onSend', async (request, _reply, payload) => {
    const caller = callerOf(request.body);
    const method = (request.params as { method?: string } | undefined)?.method;
    if (caller !== null && method !== undefined) {
      peerBytes.count(caller, method, 'received', Number(request.headers['content-length'] ?? 0));
      peerBytes.count(caller, method, 'sent', typeof payload === 'string' ? Buffer.byteLength(payload) : Buffer.isBuffer(payload) ? payload.length : 0);
    }
    return payload;
  });
  serve(
    app,
    PEER_ROUTES.call,
    async (request) => {
      const method = (request.params as { method: string }).method;
      if (!(peerMethods as readonly string[]).includes(method)) {
        throw new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no peer method ${method}`);
      }
      return node.peerApi.handle(method as PeerMethod, request.body);
    },
    { bodyLimit: node.config.limits.peerBodyMaxBytes },
  );
  serve(
    app,
    PEER_ROUTES.snapshotStream,
    async (request, reply) => {
      const lines = node.peerApi.openSnapshotStream?.(request.body);
      if (lines === undefined) throw new RegistryError('REG_ERR_ROUTE_NOT_FOUND', 'this peer serves no snapshot stream');
      const caller = callerOf(request.body);
      if (peerBytes && caller !== null) peerBytes.count(caller, 'snapshot-stream', 'received', Number(request.headers['content-length'] ?? 0));
      reply.type('application/x-ndjson');
      // Backpressure: the stream asks the generator for the next line only when the socket has
      // taken what it holds (at most about a megabyte here, one or two frames).
      const body = Readable.from(peerBytes && caller !== null ? counted(lines, (bytes) => peerBytes.count(caller, 'snapshot-stream', 'sent', bytes)) : lines, {
        objectMode: false,
        highWaterMark: STREAM_BUFFER_BYTES,
      });
      // The cap holds for a reader that stopped reading too (the generator then waits at a
      // frame and never looks at the time): the connection is closed at the cap.
      const cap = setTimeout(() => body.destroy(new Error(`snapshot stream ran past its cap of ${SNAPSHOT_STREAM_MAX_DURATION_MS} ms`)), SNAPSHOT_STREAM_MAX_DURATION_MS);
      cap.unref();
      // However the response ends (done, cut at the cap, its socket closed before the first
      // line), the stream ends with it and frees its slot: the counting wrapper, ended before its
      // first step, would not end the stream it wraps.
      body.once('close', () => {
        clearTimeout(cap);
        void lines.return(undefined);
      });
      return reply.send(body);
    },
    { bodyLimit: 64 * 1024 },
  );
}

/** Bytes of the snapshot stream held in its readable's buffer beyond what the socket holds. */
const STREAM_BUFFER_BYTES = 1024 * 1024;

/** The lines as they go, each counted (registry_peer_bytes_total). */
async function* counted(lines: AsyncIterable<string>, count: (bytes: number) => void): AsyncGenerator<string> {
  for await (const line of lines) {
    count(Buffer.byteLength(line));
    yield line;
  }
}
