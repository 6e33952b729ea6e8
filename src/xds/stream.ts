import type { Logger } from '../log/logger.js';
import type { ResourceKind, XdsCatalog } from './catalog.js';
import { TYPE_URLS, type AnyMessage } from './protos.js';
import type { NamedResource, ResponseEncoder } from './responses.js';
import { KIND_OF_TYPE_URL, sendsWholeSet, Subscription } from './subscription.js';

/** A DiscoveryRequest as the ADS service definition decodes it (snake_case). */
export interface DiscoveryRequest {
  version_info?: string;
  node?: { id?: string; cluster?: string } | null;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

export interface DiscoveryResponse {
  version_info: string;
  resources: AnyMessage[];
  type_url: string;
  nonce: string;
}

/** What the streams of one listener count together (and the metrics read). */
export interface XdsStats {
  streams: number;
  requests: number;
  acks: number;
  nacks: number;
  responses: number;
  /** Requests of a type the registry does not serve (RDS, SDS...): not answered. */
  unknownTypes: number;
}

export interface AdsStreamComponents {
  catalog: XdsCatalog;
  logger: Logger;
  stats: XdsStats;
  /** State-of-the-world responses, shared within a push (responses.ts). */
  responses: ResponseEncoder;
}

/**
 * Most resource names one request may subscribe to: every push walks a stream's names, so an
 * unbounded list would let one client make every change cost the peer without limit.
 */
export const MAX_RESOURCE_NAMES = 10_000;

/** A request the stream refuses: the call ends with INVALID_ARGUMENT and this message. */
export class BadRequestError extends Error {}

export const TYPE_URL_OF: Record<ResourceKind, string> = { listener: TYPE_URLS.listener, cluster: TYPE_URLS.cluster, endpoints: TYPE_URLS.endpoints };

/** What both stream kinds keep per resource type: the names wanted, or all of them. */
export interface NamedSubscription {
  readonly kind: ResourceKind;
  wildcard: boolean;
  readonly names: Set<string>;
}

/** Whether `wanted` holds any of `names` (every stream of a push asks this: no array is made). */
function wantsAny(wanted: ReadonlySet<string>, names: ReadonlySet<string>): boolean {
  for (const name of names) if (wanted.has(name)) return true;
  return false;
}

/**
 * What a state-of-the-world and an incremental stream share: their subscriptions per type, the
 * node they serve, and which subscriptions a push concerns.
 */
export abstract class PushStream<Sub extends NamedSubscription, Response> {
  protected readonly subscriptions = new Map<ResourceKind, Sub>();
  protected nodeId = '';
  protected closed = false;

  constructor(
    protected readonly call: { write(response: Response): unknown },
    protected readonly components: AdsStreamComponents,
  ) {}

  /** A push: the named resources may have changed (the catalog knows their versions). */
  changed(names: ReadonlySet<string>): void {
    for (const subscription of this.subscriptions.values()) {
      if (subscription.wildcard || wantsAny(subscription.names, names)) this.respond(subscription, []);
    }
  }

  close(): void {
    this.closed = true;
  }

  /** Counts a request and finds its type's subscription; null for a type not served (counted, not answered). */
  protected subscriptionFor(request: { node?: { id?: string } | null; type_url?: string }, names: number, create: (kind: ResourceKind) => Sub): Sub | null {
    const { stats, logger } = this.components;
    stats.requests += 1;
    if (request.node?.id) this.nodeId = request.node.id;
    const kind = KIND_OF_TYPE_URL.get(request.type_url ?? '');
    if (!kind) {
      stats.unknownTypes += 1;
      logger.debug({ typeUrl: request.type_url, node: this.nodeId }, 'xds: request for a type not served');
      return null;
    }
    if (names > MAX_RESOURCE_NAMES) {
      throw new BadRequestError(`a request may name at most ${MAX_RESOURCE_NAMES} resources (this one names ${names}); split the subscription over several streams`);
    }
    let subscription = this.subscriptions.get(kind);
    if (!subscription) this.subscriptions.set(kind, (subscription = create(kind)));
    return subscription;
  }

  /** Sends what the client lacks of one subscription; `added` names it just subscribed. */
  protected abstract respond(subscription: Sub, added: readonly string[]): void;
}

/**
 * One StreamAggregatedResources call (state of the world): its subscriptions per type, and
 * the responses they need. Answers a request at once (a new subscription, an unknown name
 * answered by what exists now) and a push (`changed`) with whatever moved.
 */
export class AdsStream extends PushStream<Subscription, DiscoveryResponse> {
  /** Handles one request: ACK, NACK (logged and counted, never answered by a resend), or a (new) subscription. */
  request(request: DiscoveryRequest): void {
    const { stats, logger } = this.components;
    const typeUrl = request.type_url ?? '';
    const subscription = this.subscriptionFor(request, request.resource_names?.length ?? 0, (kind) => new Subscription(kind));
    if (!subscription) return;
    const isFirst = subscription.responses === 0;
    const outcome = subscription.apply({
      resource_names: request.resource_names ?? [],
      response_nonce: request.response_nonce ?? '',
      error_detail: request.error_detail ?? null,
    });
    if (outcome === 'stale') return;
    if (outcome === 'ack') {
      stats.acks += 1;
      subscription.ackedVersion = request.version_info ?? '';
    } else if (outcome === 'nack') {
      stats.nacks += 1;
      logger.warn(
        { node: this.nodeId, typeUrl, nonce: request.response_nonce, accepted: request.version_info, names: request.resource_names?.slice(0, 10), error: request.error_detail?.message },
        'xds: a client rejected (NACK) a response; it is not sent again until the resources change',
      );
    }
    // The first request of a whole-set type is answered even when nothing exists yet, so a
    // client (Envoy's wildcard CDS) does not wait for resources that may never come.
    this.send(subscription, isFirst && sendsWholeSet(subscription.kind));
  }

  protected respond(subscription: Subscription): void {
    this.send(subscription, false);
  }

  /** Sends what the client lacks of one type; `always` sends a response even if it is empty. */
  private send(subscription: Subscription, always: boolean): void {
    if (this.closed) return;
    const { catalog } = this.components;
    const names = subscription.wildcard ? catalog.names() : [...subscription.names];
    const resources: NamedResource[] = [];
    let moved = false;
    for (const name of names) {
      const resource = catalog.get(name, subscription.kind);
      if (!resource) {
        // Gone (or never there): a whole-set type tells the client by leaving it out.
        if (subscription.sent.delete(name) && sendsWholeSet(subscription.kind)) moved = true;
        continue;
      }
      const fresh = subscription.sent.get(name) !== resource.version;
      if (fresh) moved = true;
      if (fresh || sendsWholeSet(subscription.kind)) resources.push({ name, any: resource.any, version: resource.version });
    }
    if (subscription.wildcard) {
      // A wildcard client holds what it was sent: tell it of what no longer exists.
      const present = new Set(names);
      for (const name of subscription.sent.keys()) {
        if (!present.has(name)) {
          subscription.sent.delete(name);
          if (sendsWholeSet(subscription.kind)) moved = true;
        }
      }
    }
    if (!moved && !always) return;
    for (const { name, version } of resources) subscription.sent.set(name, version);
    subscription.responses += 1;
    const response = this.components.responses.response(TYPE_URL_OF[subscription.kind], resources);
    this.components.stats.responses += 1;
    subscription.nonce = response.nonce;
    this.call.write(response);
  }
}
