import type { LocalLeaseState } from './store.js';
import type { Version } from '../clock/hlc.js';
import type { DeleteReason, InstanceData, InstanceRecord, StoredInstance } from './types.js';

/**
 * The largest offset from an origin, in ms, kept as a small integer (about 12.4 days). V8 keeps
 * an integer of 31 bits inside the object (a Smi, 31 bits where pointers are compressed); a
 * field holding any other number points to a 16-byte box of its own. Epoch-ms times do not
 * fit, so a stored entry keeps its lease times as offsets from a `TimeOrigin`.
 */
export const OFFSET_LIMIT_MS = 2 ** 30 - 1;

/**
 * How far past the newest origin a time may be for a new origin to start at it: times move
 * forward with the clock, so an origin is replaced every `OFFSET_LIMIT_MS` or so; a time
 * further away than this (a lease of years) is an outlier kept as a `FarTime`, and does not
 * move the origin away from every other time.
 */
export const REBASE_REACH_MS = 4 * OFFSET_LIMIT_MS;

/**
 * A time no origin of its entry reaches (0, which marks "none" in the lease state, or a time
 * far in the past or future): kept as it is, in an object of its own.
 */
class FarTime {
  constructor(readonly ms: number) {}
}

/** Zero (no lease, never heard, not owner): the one `FarTime` that tombstones and foreign records share. */
const FAR_ZERO = Object.freeze(new FarTime(0));

/** How a stored entry holds a time: an offset from its origin (a small integer), or a `FarTime`. */
type StoredTime = number | FarTime;

/**
 * Where the offsets of stored entries count from. An origin never changes (an entry that left
 * the store, still held by a reader, keeps reading its times right); when times move past its
 * reach a new origin replaces it (`next`), and an entry moves to the newest when one of its
 * times needs it. The first origin of a store is not anchored (no time seen yet): the first
 * time that does not fit it starts the next one, however far.
 */
export class TimeOrigin {
  /** The origin that replaced this one (null while it is the newest). */
  next: TimeOrigin | null = null;

  constructor(
    /** Epoch ms that offset 0 stands for. */
    readonly originMs: number,
    /** False for a store's first origin, before any time came. */
    readonly anchored: boolean,
  ) {}

  /** A store's first origin: none of its times seen yet. */
  static unanchored(): TimeOrigin {
    return new TimeOrigin(0, false);
  }

  /** The newest origin: this one or the last that replaced it. */
  newest(): TimeOrigin {
    let origin: TimeOrigin = this;
    while (origin.next !== null) origin = origin.next;
    return origin;
  }

  /**
   * The newest origin, after starting a new one at `timeMs` when this newest one cannot hold
   * it and it is a later time within `REBASE_REACH_MS` (or this origin is not anchored).
   */
  reaching(timeMs: number): TimeOrigin {
    const newest = this.newest();
    if (timeMs === 0 || !Number.isInteger(timeMs) || fits(timeMs - newest.originMs)) return newest;
    const later = timeMs > newest.originMs && timeMs - newest.originMs <= REBASE_REACH_MS;
    if (!later && newest.anchored) return newest;
    newest.next = new TimeOrigin(timeMs, true);
    return newest.next;
  }
}

function fits(offsetMs: number): boolean {
  return offsetMs >= -OFFSET_LIMIT_MS && offsetMs <= OFFSET_LIMIT_MS && Number.isInteger(offsetMs);
}

function encode(timeMs: number, origin: TimeOrigin): StoredTime {
  const offsetMs = timeMs - origin.originMs;
  // `| 0` turns -0 into 0: both are the same time, and only 0 is a small integer.
  if (fits(offsetMs)) return offsetMs | 0;
  return timeMs === 0 ? FAR_ZERO : new FarTime(timeMs);
}

function decode(stored: StoredTime, origin: TimeOrigin): number {
  return typeof stored === 'number' ? origin.originMs + stored : stored.ms;
}

const HIDDEN = 1;
const HELD = 2;
/** `bits` holds the flags in its low two bits and the sub-bucket above them (`subBucket * FLAG_SPAN + flags`). */
const FLAG_SPAN = 4;

/**
 * A stored instance as the store keeps it: the replicated record and this peer's lease state
 * in one object of one class, so that every entry has one hidden class with its fields inside
 * the object. The entry is its own `record`: the record's nine fields are its public fields, in
 * the order a record literal has them, and everything local to this peer is in private (`#`)
 * fields, which no spread, `JSON.stringify`, `Object.keys` or test equality sees. So a reader
 * that spreads, encodes or compares `entry.record` sees exactly the record it always did, and a
 * record costs no object of its own (96 bytes, where pointers take 8 bytes as in Node's builds)
 * beside its entry. A record is still never changed once stored: every write stores a new entry.
 *
 * The three lease times are small integers (offsets from a `TimeOrigin`) behind accessors that
 * read and take epoch ms, and the flags `hidden` and `held` share one field with the sub-bucket
 * (a digest has far fewer than 2^28 sub-buckets: the field stays a small integer). See
 * docs/benchmarks.md (Capacity) for what each step saved.
 */
export class StoredEntry implements StoredInstance, InstanceRecord {
  // The record's fields as `InstanceRecord` declares them (`implements` checks that they match).
  // `declare`: no field definition is emitted, so the constructor's assignments, in a record
  // literal's order (their JSON order), create them, rather than each being defined as
  // undefined first and then written again on every write to the store.
  declare namespace: string;
  declare service: string;
  declare instanceId: string;
  declare data: InstanceData;
  declare version: Version;
  declare owner: string;
  declare deleted: DeleteReason | null;
  declare leaseDurationMs: number;
  declare registeredAtMs: number;
  #revision: number;
  #origin: TimeOrigin;
  #leaseExpiresAt: StoredTime;
  #heardUntil: StoredTime;
  #ownedSince: StoredTime;
  /** The sub-bucket and the two flags, `subBucket * FLAG_SPAN + (hidden | held)`. */
  #bits: number;

  /** An entry holding a copy of `record`'s fields (the data object itself, not a copy of it). */
  constructor(record: InstanceRecord, lease: LocalLeaseState, revision: number, subBucket: number, origin: TimeOrigin) {
    this.namespace = record.namespace;
    this.service = record.service;
    this.instanceId = record.instanceId;
    this.data = record.data;
    this.version = record.version;
    this.owner = record.owner;
    this.deleted = record.deleted;
    this.leaseDurationMs = record.leaseDurationMs;
    this.registeredAtMs = record.registeredAtMs;
    this.#revision = revision;
    // The earliest time of the lease anchors a store's first origin (the others are later: a
    // lease runs out after it was taken).
    const first = lease.ownedSinceMs !== 0 ? lease.ownedSinceMs : lease.heardUntilMs !== 0 ? lease.heardUntilMs : lease.leaseExpiresAtMs;
    const chosen = origin.reaching(first);
    this.#origin = chosen;
    this.#leaseExpiresAt = encode(lease.leaseExpiresAtMs, chosen);
    this.#heardUntil = encode(lease.heardUntilMs, chosen);
    this.#ownedSince = encode(lease.ownedSinceMs, chosen);
    // `| 0`: a sub-bucket is a small integer, but one computed by cold code comes as a boxed number.
    this.#bits = (subBucket * FLAG_SPAN + ((lease.hidden ? HIDDEN : 0) | (lease.held ? HELD : 0))) | 0;
    // A later time of the same lease may need a newer origin (a grace period reaching past this one).
    this.leaseExpiresAtMs = lease.leaseExpiresAtMs;
    this.heardUntilMs = lease.heardUntilMs;
  }

  /**
   * What an entry holds in its private fields, as held (offsets, `FarTime`s, the packed bits):
   * for tests, which check that times stay small integers and that far ones share their box.
   */
  static heldFields(entry: StoredEntry): { leaseExpiresAt: StoredTime; heardUntil: StoredTime; ownedSince: StoredTime; bits: number } {
    return { leaseExpiresAt: entry.#leaseExpiresAt, heardUntil: entry.#heardUntil, ownedSince: entry.#ownedSince, bits: entry.#bits };
  }

  /** The replicated record: the entry itself (its public fields). */
  get record(): InstanceRecord {
    return this;
  }

  /** Local revision of the last change to this instance (see `StoredInstance`). */
  get revision(): number {
    return this.#revision;
  }

  set revision(revision: number) {
    this.#revision = revision;
  }

  /** The origin this entry's offsets count from (for tests and the store's newest origin). */
  get timeOrigin(): TimeOrigin {
    return this.#origin;
  }

  get leaseExpiresAtMs(): number {
    return decode(this.#leaseExpiresAt, this.#origin);
  }

  set leaseExpiresAtMs(timeMs: number) {
    this.#leaseExpiresAt = encode(timeMs, this.originFor(timeMs));
  }

  get heardUntilMs(): number {
    return decode(this.#heardUntil, this.#origin);
  }

  set heardUntilMs(timeMs: number) {
    this.#heardUntil = encode(timeMs, this.originFor(timeMs));
  }

  get ownedSinceMs(): number {
    return decode(this.#ownedSince, this.#origin);
  }

  set ownedSinceMs(timeMs: number) {
    this.#ownedSince = encode(timeMs, this.originFor(timeMs));
  }

  /** The anti-entropy digest sub-bucket of its key (see `StoredInstance`). */
  get subBucket(): number {
    return this.#bits >> 2; // FLAG_SPAN is 4: two bits
  }

  get hidden(): boolean {
    return (this.#bits & HIDDEN) !== 0;
  }

  set hidden(value: boolean) {
    this.#bits = value ? this.#bits | HIDDEN : this.#bits & ~HIDDEN;
  }

  get held(): boolean {
    return (this.#bits & HELD) !== 0;
  }

  set held(value: boolean) {
    this.#bits = value ? this.#bits | HELD : this.#bits & ~HELD;
  }

  /**
   * The origin to hold `timeMs` by: this entry's own while it reaches it, else the newest
   * (started at `timeMs` when the rule of `TimeOrigin.reaching` allows), the entry's other
   * times moved over to it first.
   */
  private originFor(timeMs: number): TimeOrigin {
    const current = this.#origin;
    if (timeMs === 0 || fits(timeMs - current.originMs)) return current;
    const newest = current.reaching(timeMs);
    if (newest === current) return current;
    const leaseExpiresAtMs = this.leaseExpiresAtMs;
    const heardUntilMs = this.heardUntilMs;
    const ownedSinceMs = this.ownedSinceMs;
    this.#origin = newest;
    this.#leaseExpiresAt = encode(leaseExpiresAtMs, newest);
    this.#heardUntil = encode(heardUntilMs, newest);
    this.#ownedSince = encode(ownedSinceMs, newest);
    return newest;
  }
}
