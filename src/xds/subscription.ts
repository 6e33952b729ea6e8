import type { ResourceKind } from './catalog.js';
import { HeldVersions } from './held-versions.js';
import { TYPE_URLS } from './protos.js';

/** The resource kind of each type URL the registry serves (RDS is not: routes travel inline). */
export const KIND_OF_TYPE_URL: ReadonlyMap<string, ResourceKind> = new Map([
  [TYPE_URLS.listener, 'listener'],
  [TYPE_URLS.cluster, 'cluster'],
  [TYPE_URLS.endpoints, 'endpoints'],
]);

/**
 * Listeners and Clusters: every response carries every subscribed resource that exists (a
 * client takes one left out as deleted). Endpoints: a response carries what changed only.
 */
export function sendsWholeSet(kind: ResourceKind): boolean {
  return kind !== 'endpoints';
}

/** The part of a DiscoveryRequest that the subscription state reads. */
export interface SubscriptionRequest {
  resource_names: readonly string[];
  response_nonce: string;
  error_detail?: { message?: string } | null;
}

/**
 * What a request is, for one resource type of one stream:
 * - `initial`: the first of the type (or one after a reconnect: no nonce yet);
 * - `ack` / `nack`: the answer to the latest response (a NACK carries `error_detail`);
 * - `stale`: the answer to an older response, superseded by one in flight: ignored whole,
 *   since the answer to the newer one follows with the current subscription.
 */
export type RequestKind = 'initial' | 'ack' | 'nack' | 'stale';

/**
 * One resource type's subscription on one ADS stream (state of the world): which names it
 * wants (or every one: a wildcard), the nonce of the last response, and which version of
 * each resource the client was last sent, so that a push sends only what moved and a NACKed
 * version is never sent again (a NACK is logged and counted, and the next change pushes anew).
 */
export class Subscription {
  wildcard = false;
  readonly names = new Set<string>();
  /** Name -> version last sent on this stream (a wildcard's: its last set, held-versions.ts). */
  readonly sent = new HeldVersions();
  nonce = '';
  /** How many responses of this type went out on this stream. */
  responses = 0;
  /** The version_info the client last accepted. */
  ackedVersion = '';
  /** Whether the last request applied changed what the subscription wants (its names or the wildcard). */
  changedByLastRequest = false;
  /** The wildcard set (wildcard-set.ts) whose resources `sent` holds, by generation; 0: none. */
  wildcardGeneration = 0;
  private seenRequest = false;
  /** The list the names were last taken from (a client sends the same list again in each ACK). */
  private lastList: readonly string[] = [];

  constructor(readonly kind: ResourceKind) {}

  /** The names a request's list subscribes to (`*` asks for the wildcard, it names nothing). */
  static namesOf(names: readonly string[]): Set<string> {
    const out = new Set(names);
    out.delete('*');
    return out;
  }

  /**
   * How many names the subscription would hold with a request's list: without building a set
   * when the list is the one held (every ACK of a 10,000-name subscription names them all again).
   */
  sizeWith(names: readonly string[]): number {
    const last = this.lastList;
    let same = names.length === last.length;
    for (let i = 0; same && i < names.length; i += 1) same = names[i] === last[i];
    return same ? this.names.size : Subscription.namesOf(names).size;
  }

  /** Whether a request with this nonce answers an older response (and is ignored whole). */
  isStale(responseNonce: string): boolean {
    return responseNonce !== '' && responseNonce !== this.nonce;
  }

  /** Classifies a request and, unless it is stale, takes its resource names as the subscription. */
  apply(request: SubscriptionRequest): RequestKind {
    const kind = this.classify(request);
    if (kind === 'stale') return kind;
    const names = request.resource_names;
    const wildcardBefore = this.wildcard;
    const wantsAll = names.includes('*');
    // Legacy wildcard: the first request of a type naming nothing; `*` asks for it explicitly.
    if (wantsAll || (!this.seenRequest && names.length === 0)) this.wildcard = true;
    else if (names.length > 0) this.wildcard = false;
    // What it was sent of a set is no longer the set's alone.
    if (this.wildcard !== wildcardBefore) this.wildcardGeneration = 0;
    this.seenRequest = true;
    const before = this.names.size;
    let kept = 0;
    for (const name of names) if (name !== '*' && this.names.has(name)) kept += 1;
    // An ACK naming what the subscription already holds (every push is answered so) changes nothing.
    this.changedByLastRequest = wildcardBefore !== this.wildcard || kept !== before || this.sizeWith(names) !== before;
    if (!this.changedByLastRequest) return kind;
    this.names.clear();
    for (const name of names) if (name !== '*') this.names.add(name);
    this.lastList = names;
    if (!this.wildcard) for (const name of this.sent.keys()) if (!this.names.has(name)) this.sent.delete(name);
    return kind;
  }

  private classify(request: SubscriptionRequest): RequestKind {
    if (request.response_nonce === '') return 'initial';
    if (this.isStale(request.response_nonce)) return 'stale';
    return request.error_detail ? 'nack' : 'ack';
  }

  /** Whether a change to `name` concerns this subscription. */
  wants(name: string): boolean {
    return this.wildcard || this.names.has(name);
  }
}
