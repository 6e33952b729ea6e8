/**
 * The client's view of the registry's public API types (docs/api.md), copied rather than
 * imported from the server so the client depends on nothing but the HTTP API.
 */
export const instanceStatuses = ['UP', 'DOWN', 'STARTING', 'OUT_OF_SERVICE'] as const;
export type InstanceStatus = (typeof instanceStatuses)[number];

/** An instance as a peer answers it (the instance object of docs/api.md). */
export interface Instance {
  namespace: string;
  service: string;
  instanceId: string;
  host: string;
  port: number;
  securePort: number | null;
  status: InstanceStatus;
  weight: number;
  zone: string;
  /** The instance's group inside its service (`DEFAULT_GROUP` unless registered with one; absent from older peers). */
  group?: string;
  /** The region of `zone` as the peers' configuration says (null when unknown; absent from older peers). */
  region?: string | null;
  metadata: Record<string, string>;
  owner: string;
  version: string;
  leaseDurationMs: number;
  leaseExpiresInMs: number;
  leaseLive: boolean;
  evictionHeld: boolean;
  registeredAtMs: number;
  lastUpdatedAtMs: number;
}

/** What `register()` sends: the body of `POST /v1/instances` (the namespace is the client's). */
export interface InstanceRegistration {
  service: string;
  host: string;
  port: number;
  /** Defaults (on the peer) to `host:port`. */
  instanceId?: string;
  securePort?: number | null;
  /** Defaults to `UP`. */
  status?: InstanceStatus;
  /** Relative weight for the `weighted` strategy; defaults to 1. */
  weight?: number;
  zone?: string;
  /** A group inside the service (a name; defaults to `DEFAULT_GROUP`): readers may ask for one group with `?group=`. */
  group?: string;
  metadata?: Record<string, string>;
  /** The lease to ask for; defaults to the cluster's `leaseDurationMs`. */
  leaseDurationMs?: number;
}

/** What `discover()` answers. */
export interface Discovery {
  service: string;
  /** The instances that are UP (or every listed one with `{status: 'all'}`), sorted by id. */
  instances: Instance[];
  /**
   * True when no watch stream has been in sync for this service for longer than
   * `staleAfterMs`: the list is the last one known, kept because stale beats nothing.
   */
  stale: boolean;
  /** When a peer last confirmed this list current (an event or keep-alive of the stream that serves it), epoch ms. */
  updatedAtMs: number;
  /** The peer whose stream the list came from. */
  peer: string;
}

/**
 * How `pick()` chooses among the UP instances:
 * - `round-robin`: each in turn;
 * - `random`: uniformly at random;
 * - `weighted`: at random, in proportion to `weight` (weight 0 gets no traffic);
 * - `{zone, region?, fallback}`: the instances of `zone`; when it has none, those of `region`
 *   (instances carry the region the peers give their zone, as `?near=ZONE` orders them);
 *   when that has none either, every other; chosen among by `fallback` (default
 *   `round-robin`; may itself be a zone preference, for a second choice of zone).
 */
export type PickStrategy = 'round-robin' | 'random' | 'weighted' | { zone: string; region?: string; fallback?: PickStrategy };

/** One change of a service's available instances, as `onChange` gets it. */
export interface ServiceUpdate {
  service: string;
  /** Every available (UP) instance now, sorted by id. */
  instances: Instance[];
  /** Instances that became available. */
  up: Instance[];
  /** Instances that stopped being available (removed, or no longer UP); as last known. */
  down: Instance[];
  /** Available instances whose data changed (weight, zone, metadata...). */
  changed: Instance[];
}

/** What `subscribe()` calls; every callback is optional. */
export interface SubscribeHandlers {
  /** An instance became available: add it to the pool. */
  onUp?(instance: Instance): void;
  /** An instance stopped being available: remove it from the pool. */
  onDown?(instance: Instance): void;
  /** After the onUp/onDown calls of one change: the whole available list and what changed. */
  onChange?(update: ServiceUpdate): void;
}

export interface Subscription {
  /** Stops the callbacks (no onDown is called for the instances still up). */
  close(): void;
}
