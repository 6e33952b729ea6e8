import { BucketDigest, subBucketOf } from './digest.js';
import { SharedValues } from './shared-values.js';
import { StoredEntry, TimeOrigin } from './stored-entry.js';
import {
  instanceKeyString,
  serviceIdentity,
  type InstanceKey,
  type InstanceRecord,
  type StoredInstance,
} from './types.js';

/**
 * Where a change came from: a write accepted here, one applied from another peer, or a record
 * reloaded from this peer's data dir at start (already durable, and not a new write: it must
 * be neither logged nor replicated again).
 */
export type ChangeOrigin = 'local' | 'remote' | 'restore';

/**
 * One change to the store, emitted synchronously after it is applied:
 * - `write`: the replicated record changed (register, update, status, cancel, eviction, takeover);
 * - `local`: only this peer's view changed (hidden, shown again, lease revived after expiry).
 */
export interface StoreChange {
  kind: 'write' | 'local';
  origin: ChangeOrigin;
  before: InstanceRecord | null;
  entry: StoredInstance;
}

export type LocalLeaseState = Pick<StoredInstance, 'leaseExpiresAtMs' | 'heardUntilMs' | 'hidden' | 'held' | 'ownedSinceMs'>;

/** The local lease state of a tombstone: none. */
export const NO_LEASE: LocalLeaseState = { leaseExpiresAtMs: 0, heardUntilMs: 0, hidden: false, held: false, ownedSinceMs: 0 };

/** The instances of one service, with the local revision of its last change. */
export interface ServiceEntries {
  namespace: string;
  /** The service's name as this peer first stored it; every record of the service carries it. */
  service: string;
  revision: number;
  instances: Map<string, StoredInstance>;
  /** Records that are not tombstones (the instance quota counts these). */
  liveCount: number;
}

/**
 * The replicated map, synchronous and free of I/O. It keeps, in step with every change: the
 * local revision counter, each service's revision, the anti-entropy digest, and the change
 * feed that replication, persistence and watches subscribe to. Merge decisions are made by
 * the caller (see merge.ts); the store only records their outcome.
 */
const NO_SERVICES: ReadonlyMap<string, ServiceEntries> = new Map();

export class InstanceStore {
  private revisionCounter = 0;
  private recordCount = 0;
  private serviceSetChanges = 0;
  /**
   * Services by namespace, then by identity (the name lower-cased, see `serviceIdentity`): a
   * lookup builds no key string beyond the lower-cased name.
   */
  private readonly namespaces = new Map<string, Map<string, ServiceEntries>>();
  /** Records that are not tombstones, per namespace. */
  private readonly liveByNamespace = new Map<string, number>();
  private readonly listeners = new Set<(change: StoreChange) => void>();
  private readonly purgeListeners = new Set<(purged: StoredInstance) => void>();
  readonly digest: BucketDigest;
  /** Metadata maps, zones, groups and owners shared by the records holding equal ones. */
  readonly shared = new SharedValues();
  /** Where the lease times of new entries count from (stored-entry.ts); replaced as time moves on. */
  private timeOrigin = TimeOrigin.unanchored();

  constructor(digestBuckets: number) {
    this.digest = new BucketDigest(digestBuckets);
  }

  /** The local revision: increases on every change this peer sees. */
  get revision(): number {
    return this.revisionCounter;
  }

  /** Number of records held, tombstones included. */
  get size(): number {
    return this.recordCount;
  }

  get(key: InstanceKey): StoredInstance | undefined {
    return this.namespaces.get(key.namespace)?.get(serviceIdentity(key.service))?.instances.get(key.instanceId);
  }

  /** A service by its name in any case (`orders`, `ORDERS`). */
  getService(namespace: string, service: string): ServiceEntries | undefined {
    return this.namespaces.get(namespace)?.get(serviceIdentity(service));
  }

  /** Instances (records that are not tombstones) of a namespace, all services together. */
  liveCountOfNamespace(namespace: string): number {
    return this.liveByNamespace.get(namespace) ?? 0;
  }

  /**
   * Counts the services made and dropped: it changes whenever a service gets its first record
   * or loses its last, and only then (readers keep lists of names while it stays the same).
   */
  get servicesVersion(): number {
    return this.serviceSetChanges;
  }

  /** The services of one namespace with at least one record (tombstones included), in no particular order. */
  servicesIn(namespace: string): IterableIterator<ServiceEntries> {
    return (this.namespaces.get(namespace) ?? NO_SERVICES).values();
  }

  /** Every service with at least one record (tombstones included), in no particular order. */
  *allServices(): IterableIterator<ServiceEntries> {
    for (const services of this.namespaces.values()) yield* services.values();
  }


  /** Every stored instance, tombstones included. */
  *entries(): IterableIterator<StoredInstance> {
    for (const service of this.allServices()) yield* service.instances.values();
  }

  /**
   * Stores a new version of a record with its local lease state, and announces it. A record
   * naming its service in another case than the stored service is stored under the stored
   * name (one service, shown as first registered). What is stored is a new entry holding the
   * record's fields (the entry is its own `record`), not `written` itself; the store owns the
   * record's data from then on: its metadata, zone and group, and the owner, are replaced by
   * equal shared values (shared-values.ts).
   */
  write(written: InstanceRecord, lease: LocalLeaseState, origin: ChangeOrigin): StoredInstance {
    const service = this.serviceFor(written.namespace, written.service);
    const previous = service.instances.get(written.instanceId);
    const keyString = instanceKeyString(written);
    const subBucket = previous?.subBucket ?? subBucketOf(keyString, this.digest.bucketCount);
    // The entry is the stored record (one object, one hidden class: stored-entry.ts), built from
    // the written one's fields.
    this.timeOrigin = this.timeOrigin.newest();
    const entry = new StoredEntry(written, lease, this.bump(service), subBucket, this.timeOrigin);
    // The service's own strings, its name as first stored included: a name parsed from a
    // request or a batch is a copy of its own when longer than the 10 characters V8
    // internalises in JSON.
    entry.service = service.service;
    entry.namespace = service.namespace;
    this.shared.adopt(entry, this.recordCount, previous?.record);
    if (previous) {
      this.digest.toggle(keyString, subBucket, previous.record.version, previous.record.deleted !== null);
    } else {
      this.recordCount += 1;
    }
    this.digest.toggle(keyString, subBucket, entry.version, entry.deleted !== null);
    this.countLive(service, (entry.deleted === null ? 1 : 0) - (previous && previous.record.deleted === null ? 1 : 0));
    service.instances.set(entry.instanceId, entry);
    this.emit({ kind: 'write', origin, before: previous?.record ?? null, entry });
    return entry;
  }

  /**
   * Changes only this peer's lease state of an instance. When `visibilityChanged` the change
   * is announced (with a new revision), since readers see the instance appear or vanish.
   */
  updateLease(entry: StoredInstance, patch: Partial<LocalLeaseState>, visibilityChanged: boolean): void {
    // Field by field, not `Object.assign` (a generic copy onto the entry's accessors): an owner
    // going down runs this for each of its instances in one turn.
    if (patch.leaseExpiresAtMs !== undefined) entry.leaseExpiresAtMs = patch.leaseExpiresAtMs;
    if (patch.heardUntilMs !== undefined) entry.heardUntilMs = patch.heardUntilMs;
    if (patch.ownedSinceMs !== undefined) entry.ownedSinceMs = patch.ownedSinceMs;
    if (patch.hidden !== undefined) entry.hidden = patch.hidden;
    if (patch.held !== undefined) entry.held = patch.held;
    if (!visibilityChanged) return;
    const service = this.serviceFor(entry.record.namespace, entry.record.service);
    entry.revision = this.bump(service);
    this.emit({ kind: 'local', origin: 'local', before: entry.record, entry });
  }

  /** Drops a record for good (an expired tombstone). Not on the change feed (readers never saw it); told to `onPurge` listeners. */
  purge(key: InstanceKey): void {
    const services = this.namespaces.get(key.namespace);
    const service = services?.get(serviceIdentity(key.service));
    const entry = service?.instances.get(key.instanceId);
    if (!services || !service || !entry) return;
    this.digest.toggle(instanceKeyString(key), entry.subBucket, entry.record.version, entry.record.deleted !== null);
    if (entry.record.deleted === null) this.countLive(service, -1);
    this.shared.release(entry.record);
    service.instances.delete(key.instanceId);
    this.recordCount -= 1;
    if (service.instances.size === 0) {
      services.delete(serviceIdentity(key.service));
      this.serviceSetChanges += 1;
      if (services.size === 0) this.namespaces.delete(key.namespace);
    }
    for (const listener of this.purgeListeners) listener(entry);
  }

  /** Subscribes to the change feed; returns the unsubscribe function. */
  onChange(listener: (change: StoreChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Subscribes to purges (not part of the change feed: nothing replicated or visible changed);
   * for indexes keyed by record identity, which a purge ends. Returns the unsubscribe function.
   */
  onPurge(listener: (purged: StoredInstance) => void): () => void {
    this.purgeListeners.add(listener);
    return () => this.purgeListeners.delete(listener);
  }

  private serviceFor(namespace: string, service: string): ServiceEntries {
    let services = this.namespaces.get(namespace);
    if (!services) {
      services = new Map();
      this.namespaces.set(namespace, services);
    }
    const identity = serviceIdentity(service);
    let entries = services.get(identity);
    if (!entries) {
      entries = { namespace, service, revision: 0, instances: new Map(), liveCount: 0 };
      services.set(identity, entries);
      this.serviceSetChanges += 1;
    }
    return entries;
  }

  private countLive(service: ServiceEntries, delta: number): void {
    if (delta === 0) return;
    service.liveCount += delta;
    const count = (this.liveByNamespace.get(service.namespace) ?? 0) + delta;
    if (count === 0) this.liveByNamespace.delete(service.namespace);
    else this.liveByNamespace.set(service.namespace, count);
  }

  private bump(service: ServiceEntries): number {
    this.revisionCounter += 1;
    service.revision = this.revisionCounter;
    return this.revisionCounter;
  }

  private emit(change: StoreChange): void {
    for (const listener of this.listeners) listener(change);
  }
}
