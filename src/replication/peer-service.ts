import type { Clock } from '../clock/clock.js';
import { RegistryError } from '../errors.js';
import { parsePingReqRequest, parsePingRequest, parsePeerId } from '../membership/messages.js';
import type { Membership } from '../membership/membership.js';
import type { DigestEntry, PeerAnswer, PeerMethod } from '../transport/peer-calls.js';
import type { PeerApi } from '../transport/transport.js';
import type { Registry } from '../registry/registry.js';
import { SUB_BUCKETS } from '../registry/digest.js';
import type { AntiEntropy } from './anti-entropy.js';
import type { Inbox } from './inbox.js';
import { SnapshotStreams } from './snapshot-stream.js';
import { parseKeyString, requireArray, requireCount, requireObject, requireString, toWireRecord } from './wire.js';

/** Most records one replicate call may carry. */
const MAX_BATCH_RECORDS = 20_000;
/** Most digest entries one reconcile call may carry. */
const MAX_RECONCILE_ENTRIES = 500_000;

function parseEntries(value: unknown): DigestEntry[] {
  return requireArray('entries', value, MAX_RECONCILE_ENTRIES).map((item, index) => {
    if (!Array.isArray(item) || typeof item[0] !== 'string' || typeof item[1] !== 'string' || (item[2] !== 0 && item[2] !== 1)) {
      throw new RegistryError('REG_ERR_VALIDATION', `entries[${index}]: must be [key, version, 0 or 1]`);
    }
    return [item[0], item[1], item[2]];
  });
}

/** Most instances one lease check may ask about (the asker sends them in batches of its own). */
export const MAX_LEASE_CHECK_ENTRIES = 20_000;

function parseLeaseCheckEntries(value: unknown): Array<[string, string]> {
  return requireArray('entries', value, MAX_LEASE_CHECK_ENTRIES).map((item, index) => {
    if (!Array.isArray(item) || item.length !== 2 || typeof item[0] !== 'string' || typeof item[1] !== 'string') {
      throw new RegistryError('REG_ERR_VALIDATION', `entries[${index}]: must be [key, version]`);
    }
    return [item[0], item[1]];
  });
}

/** The handler of one method: checks the caller's JSON, then answers as `PeerCalls` says. */
type Handler<M extends PeerMethod> = (body: Record<string, unknown>) => PeerAnswer<M> | Promise<PeerAnswer<M>>;

/**
 * The receiving side of the peer API: one small handler per method, each checking its body
 * before anything is touched. The HTTP peer routes and the simulated network both call
 * `handle`, so every test runs the production path.
 */
export class PeerService implements PeerApi {
  private readonly handlers: { [M in PeerMethod]: Handler<M> };
  /** The start-up snapshot streams this peer serves (`POST /v1/peer/snapshot-stream`). */
  readonly snapshotStreams: SnapshotStreams;

  constructor(components: {
    membership: Membership;
    inbox: Inbox;
    antiEntropy: AntiEntropy;
    registry: Registry;
    clock: Clock;
    /** Resolves on a later turn of the event loop: a snapshot stream waits for it between frames. */
    nextTurn(): Promise<void>;
    /**
     * Whether this peer's registry is settled: ready, or not ready but holding no registry it
     * knows may be partial (bootstrap.ts). Sent with every snapshot page and stream.
     */
    settled(): boolean;
  }) {
    const { membership, inbox, antiEntropy, registry, clock, nextTurn, settled } = components;
    this.snapshotStreams = new SnapshotStreams({
      store: registry.store,
      clock,
      leaseView: () => registry.leaseView(),
      members: () => membership.descriptors(),
      settled,
      nextTurn,
    });
    const bucketLimit = () => 1 << 20;
    const parseBuckets = (name: string, value: unknown, max: number, maxItems = bucketLimit()) =>
      requireArray(name, value, maxItems).map((bucket, index) => requireCount(`${name}[${index}]`, bucket, max));
    /** The digest's own bucket numbers, no more of them than it has: an answer is at most 512 KB. */
    const digestBuckets = () => registry.store.digest.bucketCount;
    this.handlers = {
      replicate: (body) =>
        inbox.apply(
          parsePeerId('from', body.from),
          requireArray('records', body.records, MAX_BATCH_RECORDS),
          body.repair === true ? 'repair' : 'replication',
        ),
      ping: (body) => membership.handlePing(parsePingRequest(body)),
      'ping-req': (body) => membership.handlePingReq(parsePingReqRequest(body)),
      digest: (body) =>
        antiEntropy.handleDigest(
          { from: parsePeerId('from', body.from), root: requireString('root', body.root, 256), ...(body.closing === true ? { closing: true as const } : {}) },
          settled(),
        ),
      subdigest: (body) =>
        antiEntropy.handleSubdigest({
          from: parsePeerId('from', body.from),
          buckets: parseBuckets('buckets', body.buckets, digestBuckets() - 1, digestBuckets()),
        }),
      reconcile: (body) =>
        antiEntropy.handleReconcile({
          from: parsePeerId('from', body.from),
          // The digest's own numbers, no more of them than it has: the work of an answer is
          // bounded by the digest's size, whatever a request asks.
          buckets: parseBuckets('buckets', body.buckets, digestBuckets() - 1, digestBuckets()),
          ...(body.subBuckets === undefined ? {} : { subBuckets: parseBuckets('subBuckets', body.subBuckets, digestBuckets() * SUB_BUCKETS - 1, digestBuckets() * SUB_BUCKETS) }),
          // Base64 of 2 bytes a bucket.
          ...(body.round === undefined ? {} : { round: requireString('round', body.round, Math.ceil((digestBuckets() * 2) / 3) * 4) }),
          entries: parseEntries(body.entries),
        }),
      snapshot: async (body) => {
        const request = {
          from: parsePeerId('from', body.from),
          fromBucket: requireCount('fromBucket', body.fromBucket, bucketLimit()),
          bucketSpan: requireCount('bucketSpan', body.bucketSpan, bucketLimit()),
        };
        // Read before the page is built: what the page says of the records it carries.
        const settledNow = settled();
        return { ...(await antiEntropy.handleSnapshot(request, membership.descriptors())), settled: settledNow };
      },
      'lease-check': (body) => {
        const from = parsePeerId('from', body.from);
        const entries = parseLeaseCheckEntries(body.entries);
        const view = registry.leaseView();
        const records = [];
        for (const [keyString, version] of entries) {
          const key = parseKeyString(keyString);
          const taken = key && registry.takeOverAtExpiry(key, from, version);
          if (taken) records.push(toWireRecord(taken, view));
        }
        return { records };
      },
    };
  }

  /**
   * Opens a start-up snapshot stream for the caller (`{from}`): its NDJSON lines. Throws before
   * the first line, so that the route answers with a status: 400 for a bad body,
   * 503 `REG_ERR_SNAPSHOT_BUSY` when `SNAPSHOT_STREAMS_MAX` streams are being served.
   */
  openSnapshotStream(body: unknown): AsyncGenerator<string> {
    parsePeerId('from', requireObject(body).from);
    return this.snapshotStreams.open();
  }

  async handle<M extends PeerMethod>(method: M, body: unknown): Promise<PeerAnswer<M>> {
    if (!Object.hasOwn(this.handlers, method)) throw new RegistryError('REG_ERR_ROUTE_NOT_FOUND', `no peer method ${method}`);
    const handler: Handler<M> = this.handlers[method];
    return handler(requireObject(body));
  }
}
