import type { Version } from '../clock/hlc.js';
import type { ProtocolExtensions } from './extensions.js';

export const instanceStatuses = ['UP', 'DOWN', 'STARTING', 'OUT_OF_SERVICE'] as const;
export type InstanceStatus = (typeof instanceStatuses)[number];

/** Why a record became a tombstone: an explicit cancel, or a lease eviction by its owner. */
export type DeleteReason = 'cancel' | 'evict';

/** What a client tells us about an instance. */
export interface InstanceData {
  host: string;
  port: number;
  securePort: number | null;
  status: InstanceStatus;
  weight: number;
  zone: string;
  metadata: Record<string, string>;
  /**
   * The instance's group inside its service (as Nacos groups services): readers may ask for one
   * group only. Absent means `DEFAULT_GROUP`; only another group is stored (and replicated).
   */
  group?: string;
  /**
   * How often the instance's client said it heartbeats, when it said (a protocol adapter sets it); absent:
   * the configured interval. Self-preservation counts the renewals it expects from this.
   */
  renewalIntervalMs?: number;
  /**
   * What protocol adapters keep beyond the fields above, by adapter name (see extensions.ts):
   * opaque to the core, replicated and persisted with the record; the native `/v1` view
   * leaves it out.
   */
  extensions?: ProtocolExtensions;
}

/** The group of an instance that names none. */
export const DEFAULT_GROUP = 'DEFAULT_GROUP';

/** The group of an instance's data. */
export function groupOf(data: InstanceData): string {
  return data.group ?? DEFAULT_GROUP;
}

export interface InstanceKey {
  namespace: string;
  service: string;
  instanceId: string;
}

/**
 * The replicated record. Two peers holding the same `version` of a key hold identical records;
 * nothing in here is local to a peer (the local lease lives in `StoredInstance`).
 */
export interface InstanceRecord extends InstanceKey {
  data: InstanceData;
  /** HLC timestamp + writer id of the last write; last writer wins. */
  version: Version;
  /** The peer holding the lease: it alone evicts the instance when the lease runs out. */
  owner: string;
  /** Tombstone: null while the instance exists. A tombstone keeps the last data. */
  deleted: DeleteReason | null;
  leaseDurationMs: number;
  /** HLC wall time of the first registration of this instance (informational). */
  registeredAtMs: number;
}

/** A record plus what this peer alone knows about it. */
export interface StoredInstance {
  record: InstanceRecord;
  /** Local lease: renewed by registers and heartbeats here, or set as a grace period. */
  leaseExpiresAtMs: number;
  /** Until when a client talking to this peer vouches for the instance (register/heartbeat here). */
  heardUntilMs: number;
  /** Evicted locally (its owner is down and the grace ran out): kept in the map, not served. */
  hidden: boolean;
  /**
   * The lease ran out but an eviction guard (per-service or per-run cap) keeps the instance
   * served for now; cleared by a heartbeat.
   */
  held: boolean;
  /** When this peer became the lease owner (0 when it is not): expected renewals count from here. */
  ownedSinceMs: number;
  /** Local revision of the last change to this instance. */
  revision: number;
  /**
   * The anti-entropy digest sub-bucket of its key (`subBucketOf`, computed once, when first
   * stored); its bucket is `bucketOfSub(subBucket)`.
   */
  subBucket: number;
}

/** The separator inside a key; namespace and service names never contain it. */
export const KEY_SEPARATOR = '/';

/**
 * What identifies a service: its name lower-cased. Service names are one name whatever their
 * case and whatever the protocol that brought them (the DNS rule, RFC 4343): `orders`,
 * `Orders` and `ORDERS` are the same service, shown as first registered. Names are
 * ASCII (validate.ts), so lower-casing is exact.
 */
export function serviceIdentity(service: string): string {
  return service.toLowerCase();
}

/** The map key of an instance: `namespace/service/instanceId`, the service by its identity. */
export function instanceKeyString(key: InstanceKey): string {
  return `${key.namespace}${KEY_SEPARATOR}${serviceIdentity(key.service)}${KEY_SEPARATOR}${key.instanceId}`;
}

/** The map key of a service: `namespace/service`, the service by its identity. */
export function serviceKeyString(namespace: string, service: string): string {
  return `${namespace}${KEY_SEPARATOR}${serviceIdentity(service)}`;
}
