import type { Clock, TimerHandle } from '../../clock/clock.js';
import { RegistryError } from '../../errors.js';
import type { Logger } from '../../log/logger.js';
import type { ServiceChange, ServiceViews } from '../../views/service-views.js';
import { failure, grpcHandlers, serviceInfoOf, type GrpcConnection, type GrpcHandlerDeps, type GrpcSubscription } from './handlers.js';
import { messageOf, payloadOf, payloadOfJson, type Payload } from './protocol.js';

/** The server side of one `BiRequestStream/requestBiStream` call, as far as this module uses it. */
export interface PushStream {
  write(payload: Payload): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

interface LiveConnection extends GrpcConnection {
  stream: PushStream | null;
  /** The stream is not taking writes (its client stopped reading): pushes wait for 'drain'. */
  backedUp: boolean;
  /** Subscriptions changed while backed up: pushed on drain. */
  stale: Set<string>;
  /** When it last made a request: one that never opens its stream is forgotten after `streamlessIdleMs`. */
  lastSeenMs: number;
}

export interface GrpcConnectionsComponents extends GrpcHandlerDeps {
  clock: Clock;
  views: ServiceViews;
  logger: Logger;
}

export interface GrpcConnectionsInit {
  /** How often the leases of the instances of open connections are renewed, in ms. */
  renewIntervalMs: number;
  /** Most connections held at once; past it a new one is refused. */
  connectionsMax: number;
  /** Most connections from one source address: one host cannot take the whole table. */
  connectionsPerSourceMax: number;
  /** How long a connection that made unary calls but opened no bi-stream is kept after its last call, in ms. */
  streamlessIdleMs: number;
}

/**
 * The Nacos 2.x connections of one peer. A connection is the client's HTTP/2 connection,
 * named by its peer address (`ip:port`, the same for its unary calls and its bi-stream).
 * - Its instances live as long as it does: every `renewIntervalMs` their leases are renewed
 *   while its bi-stream is open; when the stream ends they are no longer renewed and expire
 *   by the lease rules (self-preservation and the eviction guards apply as to any instance).
 * - Its subscriptions are pushed (`NotifySubscriberRequest` on the bi-stream) after every
 *   change of their service: one JSON per (service, group, clusters) and change, shared by
 *   every connection subscribed to it; a stream that stops reading gets the latest state
 *   once it drains, not a queue of every change.
 */
export class GrpcConnections {
  private readonly connections = new Map<string, LiveConnection>();
  private readonly perSource = new Map<string, number>();
  private readonly dirty = new Set<string>();
  private flushTimer: TimerHandle | null = null;
  private readonly renewTimer: TimerHandle;
  private readonly unsubscribe: () => void;
  private pushId = 0;
  /** Pushes written and NotifySubscriberResponses received: for tests and metrics. */
  readonly counts = { pushes: 0, acks: 0 };

  constructor(
    private readonly components: GrpcConnectionsComponents,
    private readonly init: GrpcConnectionsInit,
  ) {
    this.unsubscribe = components.views.onChange((change) => this.onChange(change));
    this.renewTimer = components.clock.setInterval(() => this.renew(), init.renewIntervalMs);
  }

  get size(): number {
    return this.connections.size;
  }

  /** The connection of a peer address, made on first use (a unary call may come before the stream). */
  private connectionOf(peer: string): LiveConnection {
    let connection = this.connections.get(peer);
    const nowMs = this.components.clock.nowMs();
    if (connection) connection.lastSeenMs = nowMs;
    else {
      if (this.connections.size >= this.init.connectionsMax) {
        throw new RegistryError('REG_ERR_TOO_MANY_CONNECTIONS', `this peer already holds ${this.init.connectionsMax} Nacos connections (nacos.pushTargetsMax); use another server`, 5);
      }
      const address = addressOf(peer);
      const fromSource = this.perSource.get(address) ?? 0;
      if (fromSource >= this.init.connectionsPerSourceMax) {
        throw new RegistryError('REG_ERR_TOO_MANY_CONNECTIONS', `this peer already holds ${fromSource} Nacos connections from ${address} (nacos.pushTargetsPerSourceMax)`, 5);
      }
      this.perSource.set(address, fromSource + 1);
      connection = { id: peer, address, instances: new Map(), subscriptions: new Map(), stream: null, backedUp: false, stale: new Set(), lastSeenMs: nowMs };
      this.connections.set(peer, connection);
    }
    return connection;
  }

  /** Answers one unary request (`Request/request`). */
  async request(peer: string, payload: Payload): Promise<Payload> {
    const message = messageOf(payload);
    if (!message) return payloadOf('ErrorResponse', { resultCode: 500, errorCode: 400, success: false, message: 'REG_ERR_VALIDATION: the payload must carry a type and a JSON object body', requestId: null });
    const handler = Object.hasOwn(grpcHandlers, message.type) ? grpcHandlers[message.type] : undefined;
    if (!handler) {
      return payloadOf('ErrorResponse', { resultCode: 500, errorCode: 501, success: false, message: `REG_ERR_VALIDATION: request type ${message.type.slice(0, 64)} is not served (docs/nacos.md)`, requestId: message.body.requestId ?? null });
    }
    try {
      const connection = this.connectionOf(peer);
      const answer = await handler(this.components, { body: message.body, headers: message.headers, connection });
      return payloadOf(answer.type, answer.body);
    } catch (error) {
      const answer = failure(error, message.body.requestId);
      return payloadOf(answer.type, answer.body);
    }
  }

  /** A message on a connection's bi-stream: the setup (the stream becomes its push channel) or a push's response. */
  streamed(peer: string, stream: PushStream, payload: Payload): void {
    const message = messageOf(payload);
    if (!message) return;
    if (message.type === 'ConnectionSetupRequest') {
      const connection = this.connectionOf(peer);
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
    if (!this.connections.delete(connection.id)) return;
    const left = (this.perSource.get(connection.address) ?? 1) - 1;
    if (left > 0) this.perSource.set(connection.address, left);
    else this.perSource.delete(connection.address);
  }

  close(): void {
    this.unsubscribe();
    this.perSource.clear();
    this.renewTimer.cancel();
    this.flushTimer?.cancel();
    this.connections.clear();
  }

  /**
   * Renews the leases of the instances of every connection whose stream is open, and forgets
   * the connections that never opened one (unary calls only) once idle for `streamlessIdleMs`:
   * they would otherwise hold a place in the table for ever.
   */
  private renew(): void {
    const idleSinceMs = this.components.clock.nowMs() - this.init.streamlessIdleMs;
    for (const [peer, connection] of this.connections) {
      if (connection.stream) this.components.writes.renew(connection.instances.values());
      else if (connection.lastSeenMs < idleSinceMs) this.forget(connection);
    }
  }

  private onChange(change: ServiceChange): void {
    this.dirty.add(this.components.views.keyOf(change.namespace, change.service));
    this.flushTimer ??= this.components.clock.setTimeout(() => this.flush(), 0);
  }

  private flush(): void {
    this.flushTimer = null;
    if (this.dirty.size === 0) return;
    const changed = new Set(this.dirty);
    this.dirty.clear();
    const shared = new Map<string, Buffer>();
    for (const connection of this.connections.values()) {
      if (!connection.stream) continue;
      for (const subscription of connection.subscriptions.values()) {
        if (!changed.has(subscription.serviceKey)) continue;
        if (connection.backedUp) connection.stale.add(subscription.key);
        else this.push(connection, subscription, shared);
      }
    }
  }

  private push(connection: LiveConnection, subscription: GrpcSubscription, shared: Map<string, Buffer>): void {
    let json = shared.get(subscription.key);
    if (json === undefined) {
      const info = serviceInfoOf(this.components, subscription.namespace, subscription.service, subscription.group, subscription.clusters, false);
      this.pushId += 1;
      json = Buffer.from(`{"serviceInfo":${info},"module":"naming","headers":{},"requestId":"push-${this.pushId}"}`);
      shared.set(subscription.key, json);
    }
    const stream = connection.stream!;
    this.counts.pushes += 1;
    if (!stream.write(payloadOfJson('NotifySubscriberRequest', json))) {
      connection.backedUp = true;
      stream.once('drain', () => this.drained(connection));
    }
  }

  private drained(connection: LiveConnection): void {
    connection.backedUp = false;
    const stale = [...connection.stale];
    connection.stale.clear();
    const shared = new Map<string, Buffer>();
    for (const key of stale) {
      const subscription = connection.subscriptions.get(key);
      if (subscription && connection.stream && !connection.backedUp) this.push(connection, subscription, shared);
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
