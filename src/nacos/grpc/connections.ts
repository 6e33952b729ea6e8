import type { Clock, TimerHandle } from '../../clock/clock.js';
import type { LimitSubject } from '../../adapters/limits.js';
import { RegistryError } from '../../errors.js';
import type { Logger } from '../../log/logger.js';
import { outcomeOfStatus, type AdapterRecorders } from '../../metrics/adapter-metrics.js';
import type { HeldRefusal, HeldSlot } from '../../security/held-shares.js';
import type { ServiceChange, ServiceViews } from '../../views/service-views.js';
import { failure, grpcCredentialsOf, grpcHandlers, serviceInfoOf, type GrpcConnection, type GrpcHandlerDeps, type GrpcSubscription } from './handlers.js';
import { messageOf, nacosPackage, payloadCodecOf, payloadOf, payloadOfJson, type EncodedPayload, type Payload, type PayloadCodec, type PushMessage } from './protocol.js';
import { SubscriptionIndex } from './subscription-index.js';

/** The server side of one `BiRequestStream/requestBiStream` call, as far as this module uses it. */
export interface PushStream {
  write(message: PushMessage): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

interface LiveConnection extends GrpcConnection {
  stream: PushStream | null;
  /** The stream is not taking writes (its client stopped reading): pushes wait for 'drain'. */
  backedUp: boolean;
  /** Subscriptions changed while backed up, with when their oldest unpushed change was made: pushed on drain. */
  stale: Map<string, number>;
  /** When it last made a request: one that never opens its stream is forgotten after `streamlessIdleMs`. */
  lastSeenMs: number;
  /** Its slot of the peer's `nacos grpc connections` pool, given back when it is forgotten. */
  slot: HeldSlot;
}

export interface GrpcConnectionsComponents extends Omit<GrpcHandlerDeps, 'subscriptions'> {
  clock: Clock;
  views: ServiceViews;
  logger: Logger;
  /** Takes a connection's slot for whom its first request presents (the contract's limits port: a share per principal). */
  hold: (subject: LimitSubject) => HeldSlot | HeldRefusal;
  /** Where each request's outcome and each push are recorded (the contract's metrics port, adapter 'nacos'). */
  metrics?: AdapterRecorders;
  /** How a push is serialized once for every stream it goes to (default: the Payload codec of nacosPackage()). */
  codec?: PayloadCodec;
}

export interface GrpcConnectionsInit {
  /** How often the leases of the instances of open connections are renewed, in ms. */
  renewIntervalMs: number;
  /** How long a connection that made unary calls but opened no bi-stream is kept after its last call, in ms. */
  streamlessIdleMs: number;
  /** Instances a renewal renews before it yields the event loop; default `RENEW_SLICE_INSTANCES` (tests set it low). */
  renewSliceInstances?: number;
}

/**
 * Instances renewed in one turn of the event loop: the renewal of every open connection's
 * instances goes on in the next turns, connection by connection (each holds at most
 * `nacos.grpcInstancesPerConnectionMax`). A heartbeat is about 0.25 µs of work here: 1,000,000
 * instances renewed in one turn held the loop about 250 ms (an audit, 2026-12-06).
 */
export const RENEW_SLICE_INSTANCES = 10_000;

/** A renewal going through the connections in turns: where it is, and the timer of its next turn. */
interface RenewPass {
  connections: IterableIterator<LiveConnection>;
  next: TimerHandle | undefined;
}

/**
 * The Nacos 2.x connections of one peer. A connection is the client's HTTP/2 connection,
 * named by its peer address (`ip:port`, the same for its unary calls and its bi-stream).
 * - Its instances live as long as it does: every `renewIntervalMs` their leases are renewed
 *   while its bi-stream is open; when the stream ends they are no longer renewed and expire
 *   by the lease rules (self-preservation and the eviction guards apply as to any instance).
 * - Its subscriptions are pushed (`NotifySubscriberRequest` on the bi-stream) after every
 *   change of their service: the subscribers of a service are found in an index by service
 *   (subscription-index.ts), and one payload per (service, group, clusters) and change is
 *   serialized once, its bytes written to every connection subscribed to it; a stream that
 *   stops reading gets the latest state once it drains, not a queue of every change.
 */
export class GrpcConnections {
  private readonly connections = new Map<string, LiveConnection>();
  /** Services changed since the last flush, with when the first of those changes was seen (the push delay's start). */
  private readonly dirty = new Map<string, number>();
  private flushTimer: TimerHandle | null = null;
  private readonly renewTimer: TimerHandle;
  /** The renewal under way, while it takes more than one turn; a tick meanwhile starts none. */
  private renewing: RenewPass | undefined;
  private readonly unsubscribe: () => void;
  private pushId = 0;
  private readonly subscriptions = new SubscriptionIndex<LiveConnection>();
  private readonly handlerDeps: GrpcHandlerDeps;
  private readonly codec: PayloadCodec;
  /** Pushes written, push payloads serialized (one per variant and change), NotifySubscriberResponses received: for tests and metrics. */
  readonly counts = { pushes: 0, encodes: 0, acks: 0 };

  constructor(
    private readonly components: GrpcConnectionsComponents,
    private readonly init: GrpcConnectionsInit,
  ) {
    this.handlerDeps = { ...components, subscriptions: this.subscriptions };
    this.codec = components.codec ?? payloadCodecOf(nacosPackage());
    this.unsubscribe = components.views.onChange((change) => this.onChange(change));
    this.renewTimer = components.clock.setInterval(() => this.renew(), init.renewIntervalMs);
  }

  get size(): number {
    return this.connections.size;
  }

  /**
   * The connection of a peer address, made on first use (a unary call may come before the
   * stream): it takes a slot of the connection pool for whom `credentials` say (a valid token,
   * else the address), so one principal holds at most its share (limits.heldSharePerPrincipalRatio).
   */
  private connectionOf(peer: string, body: Record<string, unknown>, headers: Record<string, string>): LiveConnection {
    let connection = this.connections.get(peer);
    const nowMs = this.components.clock.nowMs();
    if (connection) connection.lastSeenMs = nowMs;
    else {
      const address = addressOf(peer);
      const slot = this.components.hold(this.components.access.subjectOf(grpcCredentialsOf(body, headers, address)));
      if (!slot.held) throw new RegistryError('REG_ERR_TOO_MANY_CONNECTIONS', `Nacos gRPC connections: ${slot.message}`, 5);
      connection = { id: peer, address, instances: new Map(), subscriptions: new Map(), stream: null, backedUp: false, stale: new Map(), lastSeenMs: nowMs, slot };
      this.connections.set(peer, connection);
    }
    return connection;
  }

  /** Answers one unary request (`Request/request`), recording its outcome (operation `grpc <type>`). */
  async request(peer: string, payload: Payload): Promise<Payload> {
    const startedMs = performance.now();
    const message = messageOf(payload);
    const operation = message && Object.hasOwn(grpcHandlers, message.type) ? `grpc ${message.type}` : 'grpc other';
    const answered = (type: string, body: Record<string, unknown>): Payload => {
      const status = typeof body.errorCode === 'number' && body.errorCode !== 0 ? body.errorCode : 200;
      this.components.metrics?.operation(operation).observe(outcomeOfStatus(status), (performance.now() - startedMs) / 1000);
      return payloadOf(type, body);
    };
    if (!message) return answered('ErrorResponse', { resultCode: 500, errorCode: 400, success: false, message: 'REG_ERR_VALIDATION: the payload must carry a type and a JSON object body', requestId: null });
    const handler = Object.hasOwn(grpcHandlers, message.type) ? grpcHandlers[message.type] : undefined;
    if (!handler) {
      return answered('ErrorResponse', { resultCode: 500, errorCode: 501, success: false, message: `REG_ERR_VALIDATION: request type ${message.type.slice(0, 64)} is not served (docs/nacos.md)`, requestId: message.body.requestId ?? null });
    }
    try {
      const connection = this.connectionOf(peer, message.body, message.headers);
      const answer = await handler(this.handlerDeps, { body: message.body, headers: message.headers, connection });
      return answered(answer.type, answer.body);
    } catch (error) {
      const answer = failure(error, message.body.requestId);
      return answered(answer.type, answer.body);
    }
  }

  /** A message on a connection's bi-stream: the setup (the stream becomes its push channel) or a push's response. */
  streamed(peer: string, stream: PushStream, payload: Payload): void {
    const message = messageOf(payload);
    if (!message) return;
    if (message.type === 'ConnectionSetupRequest') {
      const connection = this.connectionOf(peer, message.body, message.headers);
      connection.stream = stream;
      connection.backedUp = false;
    } else if (message.type === 'NotifySubscriberResponse') {
      this.counts.acks += 1;
    }
  }

  /** The bi-stream of a peer ended: its instances stop being renewed, its subscriptions end. */
  closed(peer: string, stream: PushStream): void {
    const connection = this.connections.get(peer);
    if (connection && (connection.stream === stream || connection.stream === null)) this.forget(connection);
  }

  private forget(connection: LiveConnection): void {
    this.subscriptions.removeAll(connection);
    if (this.connections.delete(connection.id)) connection.slot.release();
  }

  /** Subscriptions held by the open connections (a connection's subscription to a variant counts once). */
  get subscriptionCount(): number {
    return this.subscriptions.size;
  }

  close(): void {
    this.unsubscribe();
    this.renewTimer.cancel();
    this.renewing?.next?.cancel();
    this.renewing = undefined;
    this.flushTimer?.cancel();
    for (const connection of this.connections.values()) connection.slot.release();
    this.connections.clear();
    this.subscriptions.clear();
  }

  /**
   * Renews the leases of the instances of every connection whose stream is open, and forgets
   * the connections that never opened one (unary calls only) once idle for `streamlessIdleMs`:
   * they would otherwise hold a place in the table for ever.
   */
  private renew(): void {
    if (this.renewing) return;
    const pass: RenewPass = { connections: this.connections.values(), next: undefined };
    this.renewing = pass;
    this.renewTurn(pass);
  }

  /**
   * One turn of a renewal: connections until `renewSliceInstances` instances are renewed. A
   * connection closed meanwhile is skipped (its instances are then left to their leases, as
   * when its stream ends), one opened meanwhile is renewed by this pass or the next.
   */
  private renewTurn(pass: RenewPass): void {
    if (this.renewing !== pass) return;
    pass.next = undefined;
    const perTurn = Math.max(1, this.init.renewSliceInstances ?? RENEW_SLICE_INSTANCES);
    const idleSinceMs = this.components.clock.nowMs() - this.init.streamlessIdleMs;
    let renewed = 0;
    for (let next = pass.connections.next(); !next.done; next = pass.connections.next()) {
      const connection = next.value;
      if (connection.stream) {
        this.components.writes.renew(connection.instances.values());
        renewed += connection.instances.size;
      } else if (connection.lastSeenMs < idleSinceMs) this.forget(connection);
      if (renewed >= perTurn) {
        pass.next = this.components.clock.setTimeout(() => this.renewTurn(pass), 0);
        return;
      }
    }
    this.renewing = undefined;
  }

  private onChange(change: ServiceChange): void {
    const key = this.components.views.keyOf(change.namespace, change.service);
    if (!this.subscriptions.has(key)) return;
    if (!this.dirty.has(key)) this.dirty.set(key, this.components.clock.nowMs());
    this.flushTimer ??= this.components.clock.setTimeout(() => this.flush(), 0);
  }

  private flush(): void {
    this.flushTimer = null;
    if (this.dirty.size === 0) return;
    const changed = [...this.dirty];
    this.dirty.clear();
    for (const [serviceKey, changedAtMs] of changed) {
      const variants = this.subscriptions.of(serviceKey);
      if (!variants) continue;
      for (const { subscription, connections } of variants.values()) {
        let encoded: EncodedPayload | null = null;
        for (const connection of connections) {
          if (!connection.stream) continue;
          if (connection.backedUp) {
            if (!connection.stale.has(subscription.key)) connection.stale.set(subscription.key, changedAtMs);
            continue;
          }
          encoded ??= this.encode(subscription);
          this.write(connection, encoded, changedAtMs);
        }
      }
    }
  }

  /** The push of a subscription's variant now, serialized once for every stream it goes to. */
  private encode(subscription: GrpcSubscription): EncodedPayload {
    const info = serviceInfoOf(this.components, subscription.namespace, subscription.service, subscription.group, subscription.clusters, false);
    this.pushId += 1;
    this.counts.encodes += 1;
    const json = Buffer.from(`{"serviceInfo":${info},"module":"naming","headers":{},"requestId":"push-${this.pushId}"}`);
    return this.codec.encode(payloadOfJson('NotifySubscriberRequest', json));
  }

  /** Writes a push to a connection's stream; `changedAtMs`: when the change it carries was seen (the metrics' change-to-push delay). */
  private write(connection: LiveConnection, encoded: EncodedPayload, changedAtMs: number): void {
    const stream = connection.stream!;
    this.counts.pushes += 1;
    this.components.metrics?.pushes.pushed(changedAtMs);
    if (!stream.write(encoded)) {
      connection.backedUp = true;
      stream.once('drain', () => this.drained(connection));
    }
  }

  private drained(connection: LiveConnection): void {
    connection.backedUp = false;
    const stale = [...connection.stale];
    connection.stale.clear();
    for (const [key, changedAtMs] of stale) {
      const subscription = connection.subscriptions.get(key);
      if (subscription && connection.stream && !connection.backedUp) this.write(connection, this.encode(subscription), changedAtMs);
    }
  }
}

/** The address part of a gRPC peer (`1.2.3.4:5678`, `[::1]:5678`, `ipv4:...`). */
export function addressOf(peer: string): string {
  const bare = peer.replace(/^ipv[46]:/, '');
  const bracket = /^\[([^\]]+)\]:\d+$/.exec(bare);
  if (bracket) return bracket[1]!;
  const colon = bare.lastIndexOf(':');
  return colon > 0 && bare.indexOf(':') === colon ? bare.slice(0, colon) : bare;
}
