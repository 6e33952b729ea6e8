import type { ResourceKind } from './catalog.js';
import type { AnyMessage } from './protos.js';
import { clientFields } from './client-log.js';
import { PushStream, TYPE_URL_OF, type RequestNode } from './stream.js';
import type { WildcardSet } from './wildcard-set.js';
import { HeldVersions } from './held-versions.js';
import { OrderedWrites, oneATurn } from './ordered-writes.js';

/** A DeltaDiscoveryRequest as the ADS service definition decodes it (snake_case). */
export interface DeltaDiscoveryRequest {
  node?: RequestNode | null;
  type_url?: string;
  resource_names_subscribe?: string[];
  resource_names_unsubscribe?: string[];
  initial_resource_versions?: Record<string, string>;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

export interface DeltaDiscoveryResponse {
  system_version_info: string;
  resources: { name: string; version: string; resource: AnyMessage }[];
  type_url: string;
  removed_resources: string[];
  nonce: string;
}

const NO_NAMES: ReadonlySet<string> = new Set();

/**
 * Most resources one incremental response carries; an answer with more (a wildcard's first: every
 * service) goes as several responses, one a turn (ordered-writes.ts), each encoded by grpc-js in
 * a few ms: one response of 200,000 took about 600 ms of one turn to encode. The protocol lets
 * a server send what a client lacks over as many responses as it likes.
 */
export const DELTA_RESOURCES_PER_RESPONSE = 2_000;
/** Most bytes of resources one incremental response carries (at least one resource): 45 KB each, 1,000 endpoints a service, are 45 MB. */
export const DELTA_BYTES_PER_RESPONSE = 4 * 1024 * 1024;
/** Most names one response's `removed_resources` carries. */
const REMOVED_PER_RESPONSE = 10_000;

/** One type's subscription on one incremental stream: what is wanted and what the client holds. */
class DeltaSubscription {
  wildcard = false;
  readonly names = new Set<string>();
  /** Name -> version the client holds (sent here, or announced in `initial_resource_versions`); a wildcard's last set as the set (held-versions.ts). */
  readonly held = new HeldVersions();
  /** The wildcard set (wildcard-set.ts) whose resources `held` holds, by generation; 0: none (a push then compares the whole set). */
  wildcardGeneration = 0;
  private seenRequest = false;

  constructor(readonly kind: ResourceKind) {}

  /** How many names of `subscribe` this subscription does not hold yet (each counted once). */
  newNamesIn(subscribe: readonly string[]): number {
    const fresh = new Set<string>();
    for (const name of subscribe) if (name !== '*' && !this.names.has(name)) fresh.add(name);
    return fresh.size;
  }

  /** Applies a request's subscribe and unsubscribe lists; answers the names it newly subscribed. */
  apply(request: DeltaDiscoveryRequest): Set<string> {
    const subscribe = request.resource_names_subscribe ?? [];
    const unsubscribe = request.resource_names_unsubscribe ?? [];
    if (!this.seenRequest) {
      // A reconnecting client says what it holds: what did not change since is not sent again.
      for (const [name, version] of Object.entries(request.initial_resource_versions ?? {})) {
        const number = Number(version);
        if (Number.isInteger(number)) this.held.set(name, number);
      }
      // Legacy wildcard: a first request subscribing to nothing.
      if (subscribe.length === 0 && unsubscribe.length === 0) this.wildcard = true;
    }
    this.seenRequest = true;
    const added = new Set<string>();
    const wildcardBefore = this.wildcard;
    for (const name of subscribe) {
      if (name === '*') this.wildcard = true;
      else if (!this.names.has(name)) {
        this.names.add(name);
        added.add(name);
      }
    }
    for (const name of unsubscribe) {
      if (name === '*') this.wildcard = false;
      else {
        this.names.delete(name);
        // A name the wildcard still wants is sent again at the next answer, which compares the whole set.
        if (this.held.delete(name)) this.wildcardGeneration = 0;
      }
    }
    if (this.wildcard !== wildcardBefore) this.wildcardGeneration = 0;
    return added;
  }
}

/**
 * One DeltaAggregatedResources call (incremental xDS): each response carries only the
 * resources that changed for this client, and names those that are gone in
 * `removed_resources`; versions are the catalog's per-resource versions.
 */
export class DeltaAdsStream extends PushStream<DeltaSubscription, DeltaDiscoveryResponse> {
  private nonceCounter = 0;
  /** Responses in the order made, one a turn when an answer is split (ordered-writes.ts). */
  private readonly writes = new OrderedWrites<DeltaDiscoveryResponse>(
    (response) => this.call.write(response),
    oneATurn(this.components.later),
    (error) => this.components.failed(error),
    () => this.closed,
  );

  request(request: DeltaDiscoveryRequest): void {
    const { stats, logger } = this.components;
    const names = (request.resource_names_subscribe?.length ?? 0) + Object.keys(request.initial_resource_versions ?? {}).length;
    const subscription = this.subscriptionFor(request, names, (kind) => new DeltaSubscription(kind));
    if (!subscription) return;
    this.checkNamespaces(request.resource_names_subscribe ?? []);
    // Names accumulate over a stream's requests: bounded per stream and per owner, not only per request.
    const before = subscription.names.size;
    const grown = before + subscription.newNamesIn(request.resource_names_subscribe ?? []);
    this.holdNames(before, grown);
    if (request.response_nonce && request.error_detail) {
      stats.nacks += 1;
      this.components.typed?.nack(request.type_url ?? '');
      logger.warn(
        clientFields({ node: this.nodeId, typeUrl: request.type_url, nonce: request.response_nonce, error: request.error_detail.message ?? '' }),
        'xds: a client rejected (NACK) an incremental response; it is not sent again until the resources change',
      );
    } else if (request.response_nonce) {
      stats.acks += 1;
      this.components.typed?.ack(request.type_url ?? '');
    }
    const added = subscription.apply(request);
    this.holdNames(grown, subscription.names.size);
    // An ACK or NACK that changes no subscription has nothing to answer: pushes send every change
    // (a wildcard's answer would be a walk of every service, for each ACK of each push).
    const changesNothing = !request.resource_names_subscribe?.length && !request.resource_names_unsubscribe?.length;
    if (request.response_nonce && changesNothing) return;
    this.respond(subscription, added);
  }

  /**
   * Sends what moved; `added` names just subscribed, told as removed when they do not exist.
   * Linear in the names the stream holds (Sets and Maps only): a request of 10,000 unknown
   * names once cost names x added comparisons (an array's `includes` per name) and held the
   * event loop for seconds (issue 33). A wildcard subscription is answered once its set is
   * complete (wildcard-set.ts).
   */
  protected respond(subscription: DeltaSubscription, added: ReadonlySet<string> = NO_NAMES): void {
    if (this.closed) return;
    if (!subscription.wildcard) return this.respondWith(subscription, added, null);
    // Sent a set already: its names are answered now, and pushes send what moved in the set since.
    if (subscription.wildcardGeneration !== 0) return this.respondWith(subscription, added, null, true);
    this.withWildcard((set) => this.respondWith(subscription, added, subscription.wildcard ? set : null));
  }

  protected respondWildcard(subscription: DeltaSubscription, set: WildcardSet): void {
    this.respondWith(subscription, NO_NAMES, set);
  }

  /**
   * Sends what the client lacks of its names and, given a wildcard set, of the set's services
   * it may see: of those that changed since the set it was last sent when that is known
   * (WildcardSets.changedSince), else of the whole set.
   */
  private respondWith(subscription: DeltaSubscription, added: ReadonlySet<string>, set: WildcardSet | null, namesOnly = false): void {
    if (this.closed) return;
    // A set older than one it was sent (answers go out one a turn, wildcard-set.ts): its names only.
    if (set !== null && set.generation < subscription.wildcardGeneration) return this.respondWith(subscription, added, null, true);
    const { kind, held } = subscription;
    let resources: DeltaDiscoveryResponse['resources'] = [];
    const removed: string[] = [];
    const visibleIn = (name: string) => {
      const entry = set?.byName.get(name);
      return entry !== undefined && this.access.sees(entry.namespace) ? entry : undefined;
    };
    const offer = (name: string, any: AnyMessage | null, version: number) => {
      if (any !== null) {
        if (held.get(name) !== version) {
          resources.push({ name, version: String(version), resource: any });
          held.set(name, version);
        }
      } else if (held.delete(name) || added.has(name)) {
        removed.push(name);
      }
    };
    let walkedHeld = set === null && !namesOnly;
    if (set !== null) {
      const changed = this.components.wildcard.changedSince(this.policy(), subscription.wildcardGeneration, set.generation);
      if (changed === null && held.empty) {
        // A first answer: every resource of the set it may see is new to the client (a list shared by the streams).
        resources = this.wholeList(set, kind).slice();
        walkedHeld = true;
      } else if (changed === null) {
        for (const entry of set.entries) if (this.access.sees(entry.namespace)) offer(entry.name, entry.resources[kind], entry.versions[kind]);
        walkedHeld = true;
      } else {
        for (const name of changed) {
          const entry = visibleIn(name);
          if (entry !== undefined) offer(name, entry.resources[kind], entry.versions[kind]);
          else if (!subscription.names.has(name) && held.delete(name)) removed.push(name);
        }
      }
      subscription.wildcardGeneration = set.generation;
    }
    for (const name of subscription.names) {
      if (visibleIn(name) !== undefined) continue;
      const resource = this.resource(name, kind);
      offer(name, resource?.any ?? null, resource?.version ?? 0);
    }
    // What it holds and no longer wants (a whole set compared, or no set): every name the client holds is looked at.
    if (walkedHeld) {
      for (const name of held.keys()) {
        if (!subscription.names.has(name) && visibleIn(name) === undefined) {
          held.delete(name);
          removed.push(name);
        }
      }
    }
    if (set !== null) this.holdSet(subscription, set);
    if (resources.length === 0 && removed.length === 0) return;
    const typeUrl = TYPE_URL_OF[kind];
    const parts = splitAnswer(resources, removed, this.components.deltaResourcesPerResponse ?? DELTA_RESOURCES_PER_RESPONSE);
    this.writes.send(...parts.map((part) => ({ system_version_info: '', resources: part.resources, type_url: typeUrl, removed_resources: part.removed, nonce: this.nextNonce() })));
  }

  /**
   * After an answer from `set`: the client holds the set's resources it may see, and those of
   * its names outside them, as sent. The set is kept as the set (held-versions.ts), the few
   * names outside it on their own.
   */
  private holdSet(subscription: DeltaSubscription, set: WildcardSet): void {
    const { held, kind } = subscription;
    const outside: [string, number][] = [];
    for (const name of subscription.names) {
      const entry = set.byName.get(name);
      if (entry !== undefined && this.sees(entry.namespace)) continue;
      const version = held.get(name);
      if (version !== undefined) outside.push([name, version]);
    }
    held.holdWhole(set, kind, this.sees);
    for (const [name, version] of outside) held.set(name, version);
  }

  /** Every resource of `kind` in `set` this stream may see, as a response carries it (PushStream.sharedList). */
  private wholeList(set: WildcardSet, kind: ResourceKind): DeltaDiscoveryResponse['resources'] {
    return this.sharedList(set, kind, 'delta', (entry) => ({ name: entry.name, version: String(entry.versions[kind]), resource: entry.resources[kind] }));
  }

  /** A delta response is this stream's alone (what it lacks): its nonce is counted per stream. */
  private nextNonce(): string {
    this.components.stats.responses += 1;
    return (++this.nonceCounter).toString(36);
  }
}

/** An answer in parts of at most `perResponse` resources and DELTA_BYTES_PER_RESPONSE bytes of them, the removed names spread over the first parts. */
function splitAnswer(
  resources: DeltaDiscoveryResponse['resources'],
  removed: string[],
  perResponse: number,
): { resources: DeltaDiscoveryResponse['resources']; removed: string[] }[] {
  // Slices of the list, not a push per resource: a wildcard's first answer is 200,000 of them.
  const groups: DeltaDiscoveryResponse['resources'][] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < resources.length; i += 1) {
    const size = resources[i]!.resource.value.length;
    if (i > start && (i - start >= perResponse || bytes + size > DELTA_BYTES_PER_RESPONSE)) {
      groups.push(resources.slice(start, i));
      start = i;
      bytes = 0;
    }
    bytes += size;
  }
  if (start < resources.length) groups.push(start === 0 ? resources : resources.slice(start));
  const parts = Math.max(groups.length, Math.ceil(removed.length / REMOVED_PER_RESPONSE));
  if (parts <= 1) return [{ resources, removed }];
  return Array.from({ length: parts }, (_, i) => ({ resources: groups[i] ?? [], removed: removed.slice(i * REMOVED_PER_RESPONSE, (i + 1) * REMOVED_PER_RESPONSE) }));
}
