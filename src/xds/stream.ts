import { status } from '@grpc/grpc-js';
import type { XdsLbPolicy, XdsLbPolicySetting } from './declaration.js';
import type { Logger } from '../log/logger.js';
import type { ResourceKind, ServiceEntry, VersionedResource, XdsCatalog } from './catalog.js';
import type { WildcardSet, WildcardSets } from './wildcard-set.js';
import { policyFor, type ClientNode } from './client-policy.js';
import { clientFields, clip } from './client-log.js';
import type { NameShares } from './name-shares.js';
import { TYPE_URLS, type AnyMessage } from './protos.js';
import { FRAMED, OrderedWrites } from './ordered-writes.js';
import type { EncodedResponse, NamedResource, ResponseEncoder } from './responses.js';
import { KIND_OF_TYPE_URL, sendsWholeSet, Subscription } from './subscription.js';
import type { XdsRecorder } from '../metrics/dns-xds-recorders.js';

/** A DiscoveryRequest as the ADS service definition decodes it (snake_case). */
export interface DiscoveryRequest {
  version_info?: string;
  node?: RequestNode | null;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

/** A request's node: who the client is (`user_agent_*` pick its balancing, client-policy.ts). */
export interface RequestNode extends ClientNode {
  id?: string;
  cluster?: string;
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
  /** Streams refused or ended for a refused request (credentials, shares, rate, bounds). */
  refused: number;
}

export interface AdsStreamComponents {
  catalog: XdsCatalog;
  /** The listener's logger: the contract's, which samples repeated lines (a client's NACKs). */
  logger: Logger;
  stats: XdsStats;
  /** State-of-the-world responses, shared within a push (responses.ts). */
  responses: ResponseEncoder;
  /** The names each principal's streams hold together (`xds.resourceNamesPerPrincipalMax`). */
  names: NameShares;
  /** `xds.lbPolicy`: the policy forced on every client, or `auto` (client-policy.ts). */
  lbPolicy: XdsLbPolicySetting;
  /** ACKs and NACKs by resource type (the peer's adapter metrics, `AdapterMetrics.xds`); none: not counted by type. */
  typed?: Pick<XdsRecorder, 'ack' | 'nack'>;
  /** The sets wildcard subscriptions get, built in turns (wildcard-set.ts). */
  wildcard: Pick<WildcardSets, 'when' | 'changedSince'>;
  /** Ends the stream for an answer that failed after its request's turn (a wildcard set's): logged, INTERNAL. */
  failed: (error: unknown) => void;
  /** Runs `run` in a later turn (the clock's `setTimeout(0)`): an incremental answer split in parts sends one a turn; none: all at once. */
  later?: (run: () => void) => void;
  /** Most resources an incremental response carries (DELTA_RESOURCES_PER_RESPONSE; tests pick a small one). */
  deltaResourcesPerResponse?: number;
}

/** Who a stream serves: its principal's key for shares, and which namespaces it may read. */
export interface StreamAccess {
  /** `token:NAME`, or `address:IP` for a stream without a token (src/security/held-shares.ts). */
  owner: string;
  sees(namespace: string): boolean;
  /** The token's name when it may read only some namespaces (naming another's resource is refused); null otherwise. */
  restrictedTo: string | null;
}

/**
 * Most resource names one stream may subscribe to, in one request or all its requests
 * together (every type counted): every push and request walks a stream's names, and each
 * costs memory while the stream lives, so an unbounded set would let one client make every
 * change cost the peer without limit.
 */
export const MAX_RESOURCE_NAMES = 10_000;

/** A request the stream refuses: the call ends with `code` and this message. */
export class StreamRefusal extends Error {
  constructor(
    readonly code: status,
    message: string,
    /** For a refused slot of the streams pool: which cap refused it (metrics). */
    readonly cap?: 'peer' | 'principal',
  ) {
    super(message);
  }
}

/** A request that is wrong in itself: INVALID_ARGUMENT. */
export class BadRequestError extends StreamRefusal {
  constructor(message: string) {
    super(status.INVALID_ARGUMENT, message);
  }
}

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
  /** The balancing this stream's client is sent: chosen from its first request's node. */
  protected lbPolicy: XdsLbPolicy | null = null;
  /** Names this stream subscribes to, every type together (counted in its owner's share). */
  private namesHeld = 0;
  private visible: string | undefined;
  /** Whether the stream may see a namespace's resources (its token's). */
  protected readonly sees = (namespace: string): boolean => this.access.sees(namespace);

  constructor(
    protected readonly call: { write(response: Response): unknown },
    protected readonly components: AdsStreamComponents,
    protected readonly access: StreamAccess,
  ) {}

  /**
   * A push: the named resources may have changed (the catalog knows their versions). Wildcard
   * subscriptions wait for their set (`wildcardChanged`). A failure ends this stream alone.
   */
  changed(names: ReadonlySet<string>): void {
    for (const subscription of this.subscriptions.values()) {
      if (!subscription.wildcard && wantsAny(subscription.names, names)) this.guarded(() => this.respond(subscription));
    }
  }

  /** The balancing this stream's client is sent, once its first request chose it; null before (the server counts the streams of each policy). */
  policyInUse(): XdsLbPolicy | null {
    return this.lbPolicy;
  }

  /** The balancing policy of the stream's wildcard subscriptions (whose set a push builds); null when it has none. */
  wildcardPolicy(): XdsLbPolicy | null {
    if (this.closed) return null;
    for (const subscription of this.subscriptions.values()) if (subscription.wildcard) return this.policy();
    return null;
  }

  /** A push to the wildcard subscriptions: `set` was built after the changes (the same set for every stream of the push). */
  wildcardChanged(set: WildcardSet): void {
    for (const subscription of this.subscriptions.values()) {
      if (subscription.wildcard) this.guarded(() => this.respondWildcard(subscription, set));
    }
  }

  /** Ends the stream's work and gives its names back to its owner's share (idempotent). */
  close(): void {
    this.closed = true;
    this.components.names.resize(this.access.owner, -this.namesHeld);
    this.namesHeld = 0;
  }

  /** The exposed namespaces this stream sees, as one key (its token's: they never change). */
  protected visibleNamespaces(): string {
    return (this.visible ??= this.components.catalog.namespaces.filter((namespace) => this.access.sees(namespace)).join('\n'));
  }

  /** The balancing this stream's resources are built for. */
  protected policy(): XdsLbPolicy {
    return this.lbPolicy ?? policyFor(this.components.lbPolicy, null);
  }

  /** A resource the stream may see (its namespaces), as built for its client's policy. */
  protected resource(name: string, kind: ResourceKind): VersionedResource | null {
    const found = this.components.catalog.lookup(name, kind, this.policy());
    return found !== null && this.access.sees(found.namespace) ? found.resource : null;
  }

  /**
   * Runs `deliver` with the wildcard set of this stream's policy once it is built: in this turn
   * when it fits one, else in a later one. A failure ends this stream alone, as does a build
   * that failed (no set comes).
   */
  protected withWildcard(deliver: (set: WildcardSet) => void): void {
    this.components.wildcard.when(
      this.policy(),
      (set) => {
        if (!this.closed) this.guarded(() => deliver(set));
      },
      undefined,
      (error) => {
        if (!this.closed) this.components.failed(error);
      },
    );
  }

  private guarded(run: () => void): void {
    try {
      run();
    } catch (error) {
      this.components.failed(error);
    }
  }

  /**
   * One item per resource of `kind` in `set` this stream may see, in the set's order, made by
   * `item`: one list per set, stream kind (`form`) and visible namespaces, shared by every stream
   * asking for it (a wildcard's first answer, a push of every Cluster: 200,000 items each).
   */
  protected sharedList<T>(set: WildcardSet, kind: ResourceKind, form: string, item: (entry: ServiceEntry) => T): T[] {
    const key = `${form}\n${kind}\n${this.visibleNamespaces()}`;
    let list = set.shared.get(key) as T[] | undefined;
    if (list === undefined) {
      list = [];
      for (const entry of set.entries) if (this.sees(entry.namespace)) list.push(item(entry));
      set.shared.set(key, list);
    }
    return list;
  }

  /**
   * Refuses (PERMISSION_DENIED) a request naming a resource of an exposed namespace the stream's
   * token may not use, as /v1 answers 403 for another namespace; a wildcard leaves those out.
   */
  protected checkNamespaces(names: readonly string[]): void {
    const token = this.access.restrictedTo;
    if (token === null) return;
    for (const name of names) {
      const ref = this.components.catalog.refOf(name);
      if (ref !== null && !this.access.sees(ref.namespace)) {
        throw new StreamRefusal(status.PERMISSION_DENIED, `token ${token} may not use namespace ${ref.namespace} (resource ${clip(name, 128)})`);
      }
    }
  }

  /**
   * Lets a subscription hold `next` names instead of `current`, within the stream's bound and
   * its owner's share; throws RESOURCE_EXHAUSTED (nothing changed) past either.
   */
  protected holdNames(current: number, next: number): void {
    const delta = next - current;
    if (delta === 0) return;
    if (this.namesHeld + delta > MAX_RESOURCE_NAMES) {
      throw new StreamRefusal(
        status.RESOURCE_EXHAUSTED,
        `a stream may subscribe to at most ${MAX_RESOURCE_NAMES} resource names, every type together (this one would hold ${this.namesHeld + delta}); ` +
          'unsubscribe from some, or split the subscription over several streams',
      );
    }
    if (!this.components.names.resize(this.access.owner, delta)) {
      throw new StreamRefusal(
        status.RESOURCE_EXHAUSTED,
        `this client's streams already subscribe to ${this.components.names.heldBy(this.access.owner)} resource names, ` +
          `its share of this peer (xds.resourceNamesPerPrincipalMax ${this.components.names.maxPerOwner}); close some streams, or give each client its own token`,
      );
    }
    this.namesHeld += delta;
  }

  /** Counts a request and finds its type's subscription; null for a type not served (counted, not answered). */
  protected subscriptionFor(request: { node?: RequestNode | null; type_url?: string }, names: number, create: (kind: ResourceKind) => Sub): Sub | null {
    const { stats } = this.components;
    // A request that was already on its way when the stream ended (refused) changes nothing.
    if (this.closed) return null;
    stats.requests += 1;
    if (request.node?.id) this.nodeId = request.node.id;
    // The policy is the first request's (the node rides on it): a stream's Clusters never change policy.
    this.lbPolicy ??= policyFor(this.components.lbPolicy, request.node);
    const kind = KIND_OF_TYPE_URL.get(request.type_url ?? '');
    if (!kind) {
      stats.unknownTypes += 1;
      return null;
    }
    if (names > MAX_RESOURCE_NAMES) {
      throw new BadRequestError(`a request may name at most ${MAX_RESOURCE_NAMES} resources (this one names ${names}); split the subscription over several streams`);
    }
    let subscription = this.subscriptions.get(kind);
    if (!subscription) this.subscriptions.set(kind, (subscription = create(kind)));
    return subscription;
  }

  /** Sends what the client lacks of one subscription (a push: something it wants may have changed). */
  protected abstract respond(subscription: Sub): void;

  /** Sends what the client lacks of a wildcard subscription, from the set of a push. */
  protected abstract respondWildcard(subscription: Sub, set: WildcardSet): void;
}

/**
 * One StreamAggregatedResources call (state of the world): its subscriptions per type, and
 * the responses they need. Answers a request at once (a new subscription, an unknown name
 * answered by what exists now) and a push (`changed`) with whatever moved.
 */
export class AdsStream extends PushStream<Subscription, DiscoveryResponse> {
  /** Responses in the order made: a large one is framed over several turns (responses.ts), those made after it wait. */
  private readonly writes = new OrderedWrites<EncodedResponse>(
    (response) => this.call.write(response),
    FRAMED,
    (error) => this.components.failed(error),
    () => this.closed,
  );

  /** Handles one request: ACK, NACK (logged and counted, never answered by a resend), or a (new) subscription. */
  request(request: DiscoveryRequest): void {
    const { stats, logger } = this.components;
    const typeUrl = request.type_url ?? '';
    const subscription = this.subscriptionFor(request, request.resource_names?.length ?? 0, (kind) => new Subscription(kind));
    if (!subscription) return;
    const isFirst = subscription.responses === 0;
    if (subscription.isStale(request.response_nonce ?? '')) return;
    this.checkNamespaces(request.resource_names ?? []);
    this.holdNames(subscription.names.size, subscription.sizeWith(request.resource_names ?? []));
    const outcome = subscription.apply({
      resource_names: request.resource_names ?? [],
      response_nonce: request.response_nonce ?? '',
      error_detail: request.error_detail ?? null,
    });
    if (outcome === 'stale') return;
    if (outcome === 'ack') {
      stats.acks += 1;
      this.components.typed?.ack(typeUrl);
      subscription.ackedVersion = request.version_info ?? '';
    } else if (outcome === 'nack') {
      stats.nacks += 1;
      this.components.typed?.nack(typeUrl);
      logger.warn(
        clientFields({ node: this.nodeId, typeUrl, nonce: request.response_nonce, accepted: request.version_info, names: request.resource_names?.slice(0, 10), error: request.error_detail?.message ?? '' }),
        'xds: a client rejected (NACK) a response; it is not sent again until the resources change',
      );
    }
    // An ACK or NACK that names what was subscribed already has nothing to answer: pushes send
    // every change (1,000 streams ACK each push; walking their names again cost each ACK a look-up per name).
    if (outcome !== 'initial' && !subscription.changedByLastRequest) return;
    // The first request of a whole-set type is answered even when nothing exists yet, so a
    // client (Envoy's wildcard CDS) does not wait for resources that may never come.
    this.send(subscription, isFirst && sendsWholeSet(subscription.kind));
  }

  protected respond(subscription: Subscription): void {
    this.send(subscription, false);
  }

  protected respondWildcard(subscription: Subscription, set: WildcardSet): void {
    this.sendSet(subscription, false, set);
  }

  /** Sends what the client lacks of one type; `always` sends a response even if it is empty. */
  private send(subscription: Subscription, always: boolean): void {
    if (this.closed) return;
    if (subscription.wildcard) {
      // Sent a set already: pushes send what moved since.
      if (subscription.wildcardGeneration !== 0 && !always) return;
      // Answered once its set is complete (wildcard-set.ts); a push may have sent it meanwhile.
      this.withWildcard((set) => {
        if (subscription.wildcard) this.sendSet(subscription, always && subscription.responses === 0, set);
      });
      return;
    }
    // The set itself, not a copy of it (a push walks every stream's names): nothing below changes it.
    const resources: NamedResource[] = [];
    let moved = false;
    for (const name of subscription.names) {
      const resource = this.resource(name, subscription.kind);
      if (!resource) {
        // Gone (or never there): a whole-set type tells the client by leaving it out.
        if (subscription.sent.delete(name) && sendsWholeSet(subscription.kind)) moved = true;
        continue;
      }
      const fresh = subscription.sent.get(name) !== resource.version;
      if (fresh) moved = true;
      if (fresh || sendsWholeSet(subscription.kind)) resources.push({ name, any: resource.any, version: resource.version });
    }
    this.write(subscription, resources, resources, moved || always);
  }

  /**
   * Sends a wildcard subscription what it lacks of `set` (the services of the namespaces the
   * stream sees): looking at the names changed since the set it was last sent when those are
   * known (WildcardSets.changedSince), at the whole set otherwise. Listeners and Clusters go
   * as the whole set, one list per set and visible namespaces shared by every stream.
   */
  private sendSet(subscription: Subscription, always: boolean, set: WildcardSet): void {
    if (this.closed) return;
    const since = subscription.wildcardGeneration;
    if (since >= set.generation && !always) return;
    const { kind, sent } = subscription;
    const whole = sendsWholeSet(kind);
    const changed = this.components.wildcard.changedSince(this.policy(), since, set.generation);
    subscription.wildcardGeneration = set.generation;
    // The resources whose version the client lacks (what a ClusterLoadAssignment response carries).
    let fresh: NamedResource[] = [];
    let moved = false;
    const offer = (entry: ServiceEntry) => {
      const version = entry.versions[kind];
      if (sent.get(entry.name) !== version) fresh.push({ name: entry.name, any: entry.resources[kind], version });
    };
    if (changed === null && sent.empty) {
      // A first answer: every resource it may see is new to the client (the list shared by the streams).
      fresh = this.wholeList(set, kind);
    } else if (changed === null) {
      for (const entry of set.entries) if (this.access.sees(entry.namespace)) offer(entry);
      // A wildcard client holds what it was sent: tell it of what no longer exists.
      for (const name of sent.keys()) {
        const entry = set.byName.get(name);
        if (entry === undefined || !this.access.sees(entry.namespace)) {
          sent.delete(name);
          if (whole) moved = true;
        }
      }
    } else {
      for (const name of changed) {
        const entry = set.byName.get(name);
        if (entry !== undefined && this.access.sees(entry.namespace)) offer(entry);
        else if (sent.delete(name) && whole) moved = true;
      }
    }
    // Sent or not, what the client holds from now on is the set's resources it may see, no more.
    sent.holdWhole(set, kind, this.sees);
    if (fresh.length > 0) moved = true;
    if (!moved && !always) return;
    this.write(subscription, whole ? this.wholeList(set, kind) : fresh, [], true);
  }

  /** Every resource of `kind` in `set` this stream may see, in the set's order: shared by the streams that see the same namespaces. */
  private wholeList(set: WildcardSet, kind: ResourceKind): NamedResource[] {
    return this.sharedList(set, kind, 'sotw', (entry) => ({ name: entry.name, any: entry.resources[kind], version: entry.versions[kind] }));
  }

  /** Writes a response sending `resources`, `sentNow` the ones whose version the client did not hold; nothing unless `send`. */
  private write(subscription: Subscription, resources: NamedResource[], sentNow: readonly NamedResource[], send: boolean): void {
    if (!send) return;
    for (const { name, version } of sentNow) subscription.sent.set(name, version);
    subscription.responses += 1;
    const response = this.components.responses.response(TYPE_URL_OF[subscription.kind], resources);
    this.components.stats.responses += 1;
    subscription.nonce = response.nonce;
    this.writes.send(response);
  }
}
