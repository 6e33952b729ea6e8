import type { FastifyInstance } from 'fastify';
import { invalid } from '../errors.js';
import type { RegistryReads } from '../app/reads.js';
import type { Clock } from '../clock/clock.js';
import type { RegistryConfig } from '../config/load.js';
import { parseGroupFilter, parseName, parseNamespace } from '../registry/validate.js';
import { serve } from '../http/route-definition.js';
import type { WatchShares } from '../http/access/watch-shares.js';
import { WATCH_ROUTES } from './route-definitions.js';
import type { WatchFrame } from '../watch/events.js';

/** Most services one watch stream may name. */
const MAX_WATCHED_SERVICES = 100;

function parseServices(value: unknown): string[] | null {
  if (value === undefined || value === '' || value === '*') return null;
  // A repeated parameter arrives as an array.
  if (typeof value !== 'string') throw invalid('services', 'must be given once, as a comma-separated list');
  const names = [...new Set(value.split(',').map((name) => name.trim()))];
  if (names.length > MAX_WATCHED_SERVICES) throw invalid('services', `must name at most ${MAX_WATCHED_SERVICES} services`);
  return names.map((name) => parseName('services', name));
}

/**
 * `GET /v1/watch?services=a,b&namespace=ns`: server-sent events. First one `snapshot` event
 * per service, then `delta` events (added, changed, removed) coalesced over
 * `cluster.watchCoalesceMs`; a keep-alive comment every `cluster.watchKeepAliveMs`; a reader
 * whose unsent data passes `cluster.watchMaxBufferedBytes` (beyond its first snapshots) when a
 * new event comes gets a `dropped` event and is cut.
 * Without `services` (or with `*`) every service of the namespace is watched; `group` keeps
 * one group's instances only.
 *
 * Every frame is the hub's shared buffer (one per service, group and change window, see
 * src/watch/hub.ts): the socket queues a reference to it, so a subscriber costs its socket and
 * the references still queued, never a copy of what it was sent. Past `watchMaxWatchers` the
 * stream is refused with 429 and Retry-After, and the answer says to long-poll instead.
 */
export async function watchRoutes(
  app: FastifyInstance,
  options: {
    reads: Pick<RegistryReads, 'watch'>;
    clock: Clock;
    config: Pick<RegistryConfig, 'cluster'>;
    /** The held slots' shares per principal (the adapter contract's limits: src/http/access/watch-shares.ts). */
    shares: WatchShares;
  },
): Promise<void> {
  const { watch } = options.reads;
  const { clock } = options;
  const { cluster } = options.config;

  serve(app, WATCH_ROUTES.watch, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const filter = { namespace: parseNamespace(query.namespace), services: parseServices(query.services), group: parseGroupFilter(query.group) };
    watch.admit();
    // Past this principal's share of the streams: 429, before anything is written.
    const slot = options.shares.stream(request);
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    // A reader is too slow when what it has not read yet, before a new event, passes the limit
    // on top of the snapshots. Those may be far larger than the limit (a namespace of 10,000
    // instances is megabytes); counting them would drop every such stream at once, however fast
    // its reader, and it would reconnect for ever. A wildcard watch's snapshots come in turns
    // (src/watch/turns.ts), each only when the socket has drained (`ready`, `resume` below), so
    // a reader is never sent more of them than it takes.
    let snapshotBytes = 0;
    const write = (bytes: Buffer | string, snapshot: boolean): boolean => {
      if (raw.destroyed || raw.writableEnded) return false;
      const backlogBytes = raw.writableLength;
      raw.write(bytes);
      if (snapshot) {
        snapshotBytes += typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length;
        return true;
      }
      return backlogBytes <= cluster.watchMaxBufferedBytes + snapshotBytes;
    };
    write(`retry: 1000\n: watching ${filter.services?.join(',') ?? '*'} in ${filter.namespace}\n\n`, true);
    // A large snapshot (WatchFrame.large: a service of thousands of instances) is written a
    // piece a turn, each piece encoded when first written and shared by the streams; frames that
    // come meanwhile wait behind it, in order. A waiting delta counts against the limit as if written.
    const waiting: WatchFrame[] = [];
    let waitingBytes = 0;
    let inPieces: { frame: WatchFrame; next: number } | undefined;
    const busy = () => inPieces !== undefined || waiting.length > 0;
    const send = (frame: WatchFrame): boolean => {
      const snapshot = frame.event.type === 'snapshot';
      if (busy()) {
        waiting.push(frame);
        if (snapshot) return true;
        waitingBytes += frame.bytes().length;
        return raw.writableLength + waitingBytes <= cluster.watchMaxBufferedBytes + snapshotBytes;
      }
      if (!frame.large) return write(frame.bytes(), snapshot);
      inPieces = { frame, next: 0 };
      writePieces();
      return true;
    };
    /** Writes the next piece (the next one in a later turn), then, once the snapshot is whole, what waited behind it. */
    const writePieces = (): void => {
      if (inPieces !== undefined) {
        const piece = inPieces.frame.piece(inPieces.next++);
        if (piece !== undefined) {
          if (write(piece, true)) clock.setTimeout(writePieces, 0);
          return;
        }
        inPieces = undefined;
      }
      while (waiting.length > 0) {
        const frame = waiting.shift()!;
        if (frame.event.type !== 'snapshot') waitingBytes -= frame.bytes().length;
        if (frame.large) {
          inPieces = { frame, next: 0 };
          writePieces();
          return;
        }
        write(frame.bytes(), frame.event.type === 'snapshot');
      }
      // The next snapshots of a wildcard watch waited for this one (`ready` below).
      subscription.resume();
    };
    const keepAlive = clock.setInterval(() => {
      // Nothing between two pieces of an event: the keep-alive waits for the snapshot's end.
      if (!busy() && !write(': keep-alive\n\n', false)) subscription.close();
    }, cluster.watchKeepAliveMs);
    const subscription = watch.subscribeFrames(
      filter,
      send,
      () => {
        slot.release();
        keepAlive.cancel();
        if (!raw.writableEnded) raw.end();
      },
      { ready: () => !raw.writableNeedDrain && !busy() },
    );
    raw.on('drain', () => subscription.resume());
    raw.on('close', () => {
      subscription.close();
      slot.release();
    });
  });
}
